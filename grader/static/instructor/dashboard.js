// Instructor dashboard: live regrade progress and queue health, confirm before regrade-all.
// The page is complete without it; this only keeps the numbers current.
(function () {
  "use strict";

  function setText(root, attr, data) {
    root.querySelectorAll("[" + attr + "]").forEach(function (el) {
      var key = el.getAttribute(attr);
      if (!(key in data)) return;
      var v = data[key];
      el.textContent = v === null || v === undefined ? "—" :
        (typeof v === "number" && !Number.isInteger(v) ? v.toFixed(2) : String(v));
    });
  }

  function poll(panel) {
    var url = panel.getAttribute("data-progress-url");
    var bar = document.getElementById("regrade-progress");
    var delay = panel.getAttribute("data-finished") === "true" ? 15000 : 2000;
    function tick() {
      fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (data) {
          if (!data) return;
          var health = document.getElementById("queue");
          if (health && data.queue) setText(health, "data-health", data.queue);
          if (data.batch) {
            setText(panel, "data-progress", data.batch);
            if (bar) {
              bar.max = Math.max(1, data.batch.total);
              bar.value = data.batch.done;
            }
            delay = data.batch.finished ? 15000 : 2000;
            panel.setAttribute("data-finished", data.batch.finished ? "true" : "false");
          }
        })
        .catch(function () { delay = 15000; })
        .then(function () { window.setTimeout(tick, delay); });
    }
    window.setTimeout(tick, delay);
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form[data-confirm]").forEach(function (form) {
      form.addEventListener("submit", function (event) {
        if (!window.confirm(form.getAttribute("data-confirm"))) event.preventDefault();
      });
    });
    var panel = document.querySelector("[data-progress-url]");
    if (panel && window.fetch) poll(panel);
  });
})();

// The live submission page: poll the status JSON about once a second and, when grading is
// done, swap in the results fragment the server rendered (already escaped there).
(function () {
  "use strict";

  var panel = document.getElementById("live");
  if (!panel || panel.dataset.done === "true") return;

  var badge = panel.querySelector("[data-status-badge]");
  var detail = panel.querySelector("[data-status-detail]");
  var note = panel.querySelector("[data-conn-note]");
  var steps = panel.querySelectorAll("[data-step]");
  var order = ["queued", "running", "done"];
  var delay = 1000;
  var last = null;

  function showStep(status, done) {
    var at = order.indexOf(done ? "done" : status);
    steps.forEach(function (li) {
      var i = order.indexOf(li.dataset.step);
      li.classList.toggle("is-past", i < at);
      li.classList.toggle("is-current", i === at);
    });
  }

  function show(state) {
    badge.className = "badge status-" + state.status;
    badge.textContent = state.label;
    detail.textContent = state.detail || "";
    showStep(state.status, state.done);
    document.title = state.label + " · Submission #" + state.id + " · micrograde";
  }

  function finish(state) {
    fetch(panel.dataset.resultsUrl, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.text();
      })
      .then(function (html) {
        var results = document.getElementById("results");
        results.innerHTML = html;
        panel.classList.remove("is-live");
        panel.dataset.done = "true";
        if (window.micrograde) window.micrograde.localTimes(results);
      })
      .catch(function () { setTimeout(function () { finish(state); }, 2000); });
  }

  function poll() {
    fetch(panel.dataset.statusUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.json();
      })
      .then(function (state) {
        note.hidden = true;
        delay = 1000;
        if (last === null || state.status !== last.status || state.detail !== last.detail) show(state);
        last = state;
        if (state.done) finish(state); else setTimeout(poll, delay);
      })
      .catch(function () {
        note.hidden = false;
        delay = Math.min(delay * 2, 8000);
        setTimeout(poll, delay);
      });
  }

  setTimeout(poll, 500);
})();

// Small page helpers: local times, copy buttons. Pages work without them.
(function () {
  "use strict";

  function localTimes(root) {
    var fmt;
    try {
      fmt = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
    } catch (e) {
      return;
    }
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      if (!/UTC$/.test(el.textContent.trim())) return;
      var when = new Date(el.getAttribute("datetime"));
      if (isNaN(when.getTime())) return;
      el.title = el.textContent.trim();
      el.textContent = fmt.format(when);
    });
  }

  function copyButtons(root) {
    root.querySelectorAll("[data-copy]").forEach(function (btn) {
      btn.addEventListener("click", function () {
        var target = document.querySelector(btn.getAttribute("data-copy"));
        if (!target) return;
        target.select();
        var done = function () {
          btn.textContent = "Copied";
          setTimeout(function () { btn.textContent = "Copy"; }, 2000);
        };
        if (navigator.clipboard) {
          navigator.clipboard.writeText(target.value).then(done, function () {});
        } else if (document.execCommand("copy")) {
          done();
        }
      });
    });
  }

  window.micrograde = { localTimes: localTimes };
  document.addEventListener("DOMContentLoaded", function () {
    localTimes(document);
    copyButtons(document);
  });
})();

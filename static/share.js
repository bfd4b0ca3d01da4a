// The teacher's "Share with the class" panel (templates/_share.html). The class follows every step this page shows
// (arrows, slider, autoplay): each step the page asks for carries the teacher token, and the server moves the class
// as it answers that request (app/web/pages/lab.py, lab_run). Reveal = the next step. The rest of the panel is htmx.
(function () {
  "use strict";

  function panel() { return document.querySelector("#share[data-token]"); }

  // A step of this run's page (a GET that swaps #step) goes with the teacher token while the class is shared.
  document.addEventListener("htmx:configRequest", function (e) {
    const p = panel();
    const target = e.detail.target;
    if (!p || !target || target.id !== "step" || e.detail.verb !== "get") return;
    e.detail.headers["Authorization"] = "Bearer " + p.dataset.token;
  });

  // Reveal = the next step (the Next link, as the → key does); the panel's tally then shows who was right.
  document.addEventListener("click", function (e) {
    const t = e.target instanceof Element ? e.target : null;
    if (!t || !t.closest("#share-reveal")) return;
    const next = document.querySelector('#step a[data-nav="next"]');
    if (next) next.click();
  });
})();

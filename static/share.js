// The teacher's "Share with the class" panel (templates/_share.html): tells the class every step this page shows
// (arrows, slider, autoplay) and reveals the next merge. Everything else in the panel is htmx.
(function () {
  "use strict";
  let sent = null;      // the step the class was last told
  let busy = false;     // one request at a time, the latest step wins: the class never ends on an older one

  function panel() { return document.querySelector("#share[data-token]"); }

  function pageStep() {
    const s = document.getElementById("step");
    return s ? +s.dataset.step : null;
  }

  function sync() {
    const p = panel();
    const k = pageStep();
    if (!p || k === null || busy || k === sent) return;
    busy = true;
    fetch("/api/sessions/" + encodeURIComponent(p.dataset.code) + "/step", {
      method: "POST",
      headers: { "Authorization": "Bearer " + p.dataset.token, "Content-Type": "application/json" },
      body: JSON.stringify({ step: k }),
    }).then(function (r) {
      if (r.ok || r.status === 404 || r.status === 403 || r.status === 409) sent = k;  // done, or nothing to tell
    }).catch(function () { /* offline for a moment: tried again below */ }).finally(function () {
      busy = false;
      if (pageStep() !== sent) setTimeout(sync, sent === k ? 0 : 1000);
    });
  }

  document.addEventListener("htmx:afterSettle", function (e) {
    const t = e.target instanceof Element ? e.target : null;
    if (!t) return;
    if (t.id === "share" && t.dataset.token) {
      if (sent === null) sent = +t.dataset.step;  // the session started at this page's step
      sync();
    } else if (t.id === "step") {
      sync();
    }
  });

  // Reveal = the next step (the Next link, as the → key does); the panel's tally then shows who was right.
  document.addEventListener("click", function (e) {
    const t = e.target instanceof Element ? e.target : null;
    if (!t || !t.closest("#share-reveal")) return;
    const next = document.querySelector('#step a[data-nav="next"]');
    if (next) next.click();
  });
})();

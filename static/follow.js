// A student following the class (templates/follow.html). The teacher's steps arrive as Server-Sent Events from
// /api/sessions/<code>/events (a plain EventSource: it reconnects by itself and resumes with Last-Event-ID);
// while the student follows, each new one asks htmx for the view again (#follow-refresh). Browsing on one's own
// (the Step links) stops following until "Follow the class".
(function () {
  "use strict";
  const root = document.getElementById("follow");
  if (!root || !window.EventSource) return;
  const live = document.getElementById("follow-live");
  const first = document.getElementById("view");
  let following = !(first && first.dataset.own === "1");  // opened at a step of one's own (?step=): browsing

  function say(text, state) {
    if (live) { live.textContent = text; live.dataset.state = state; }
  }

  function view() { return document.getElementById("view"); }

  function refresh() {
    const button = document.getElementById("follow-refresh");
    if (button && window.htmx) htmx.trigger(button, "refresh");
  }

  const source = new EventSource(root.dataset.events);
  source.onopen = function () { say("● live", "live"); };
  source.onerror = function () {
    say(source.readyState === EventSource.CLOSED ? "disconnected: reload the page" : "reconnecting…", "down");
  };
  source.onmessage = function (m) {
    let e;
    try { e = JSON.parse(m.data); } catch (err) { return; }
    if (typeof e.step === "number") {
      root.dataset.classStep = e.step;
      document.querySelectorAll("[data-class-label]").forEach(function (el) { el.textContent = e.step; });
    }
    if (e.ended) {
      source.close();
      say("session ended", "ended");
      following = true;
    }
    const v = view();
    if (following && (!v || +v.dataset.seq < e.seq || e.ended)) refresh();
  };

  document.addEventListener("click", function (e) {
    const t = e.target instanceof Element ? e.target : null;
    if (!t) return;
    if (t.closest("[data-own-nav]")) following = false;
    if (t.closest("#follow-class")) { following = true; refresh(); }
  });
})();

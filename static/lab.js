// Tokenizer lab: keyboard shortcuts, autoplay, presenter mode, the size box's limit and words, the merge tree of a token
// clicked (or chosen with Enter) in the corpus view, the presets of sentencepiece's options, and the runs this
// browser opened (for the curves form). Everything else is htmx links and forms.
(function () {
  "use strict";
  let timer = null;

  // A step on its way: the keys pressed meanwhile wait in order (→ twice quickly is two steps; the second press
  // would otherwise click the same "Next" link of the step still shown), and go one by one as each step arrives.
  let busy = false;
  const queued = [];

  function nav(name) {
    if (busy) { queued.push(name); return; }
    const el = document.querySelector('#step [data-nav="' + name + '"]');
    if (el) el.click();
  }

  function stepRequest(e) {
    const target = e.detail && e.detail.target;
    return target instanceof Element && target.id === "step";
  }

  document.addEventListener("htmx:beforeRequest", function (e) { if (stepRequest(e)) busy = true; });
  document.addEventListener("htmx:afterRequest", function (e) {
    if (stepRequest(e) && !e.detail.successful) { busy = false; queued.length = 0; }  // the error shows; no more
  });

  function stepInfo() {
    const s = document.getElementById("step");
    return s ? { k: +s.dataset.step, n: +s.dataset.steps } : null;
  }

  function setPlaying(on) {
    const btn = document.getElementById("play");
    if (timer) { clearTimeout(timer); timer = null; }
    window.__labPlaying = on;
    if (btn) { btn.setAttribute("aria-pressed", on ? "true" : "false"); btn.textContent = on ? "❚❚ Pause" : "▶ Play"; }
    if (on) schedule();
  }

  function schedule() {
    const speed = document.getElementById("speed");
    const ms = speed ? +speed.value : 1000;
    timer = setTimeout(function () {
      const info = stepInfo();
      if (!info || info.k >= info.n) { setPlaying(false); return; }
      nav("next");
    }, ms);
  }

  // after each swap of #step, keep playing (the new #play button needs its state back), or take the next key
  // pressed while it was on its way
  document.addEventListener("htmx:afterSettle", function (e) {
    if (!(e.target instanceof Element) || e.target.id !== "step") return;
    busy = false;
    const speed = document.getElementById("speed");
    if (speed && window.__labSpeed) speed.value = window.__labSpeed;
    if (queued.length) nav(queued.shift());
    else if (window.__labPlaying) setPlaying(true);
  });

  document.addEventListener("change", function (e) {
    if (e.target instanceof Element && e.target.id === "speed") window.__labSpeed = e.target.value;
  });

  // A corpus token's merge tree: the same request as the vocabulary's tree buttons make (its ids: data-ids,
  // handed out by static/app.js from the view's id list).
  function showTree(tok) {
    const box = tok.closest("#corpus-tokens");
    const id = (tok.dataset.ids || "").split(" ").filter(function (x) { return x && x !== "-1"; })[0];
    if (!box || id === undefined || !window.htmx) return;
    htmx.ajax("GET", box.dataset.tree + id + "?step=" + box.dataset.step, "#tree");
  }

  document.addEventListener("click", function (e) {
    const t = e.target instanceof Element ? e.target : null;
    if (!t) return;
    if (t.closest("#play")) setPlaying(!window.__labPlaying);
    if (t.closest("#present-toggle")) togglePresent();
    const tok = t.closest("#corpus-tokens > span");
    if (tok) showTree(tok);
    const preset = t.closest(".spm-preset");
    if (preset) fillPreset(preset);
  });

  // A preset of sentencepiece's options (Llama 2's, its defaults): its values into the form's sp_<option> fields.
  function fillPreset(button) {
    const form = button.closest("form");
    const options = JSON.parse(button.dataset.preset || "{}");
    Object.keys(options).forEach(function (name) {
      const field = form && form.elements.namedItem("sp_" + name);
      if (!field) return;
      const value = options[name];
      if (field.type === "checkbox") field.checked = !!value;
      else field.value = Array.isArray(value) ? value.join("\n") : String(value);
    });
    const status = form && form.querySelector("#spm-preset-status");
    if (status) status.textContent = button.textContent + ": filled in";
  }

  // The size box's limit follows what it counts: merges, or tokens (the vocabulary: bases + merges).
  document.addEventListener("change", function (e) {
    const kind = e.target instanceof Element && e.target.closest("select[name=size_kind]");
    const size = kind && kind.form && kind.form.querySelector("input[name=size]");
    if (size) size.max = kind.value === "merges" ? size.dataset.maxMerges : size.dataset.maxVocab;
  });

  // What the first size choice counts, in the chosen algorithm's words (merges; Unigram: learned pieces). The
  // words are the template's (data-<algorithm> on the option); which help line shows is CSS (:has).
  document.addEventListener("change", function (e) {
    const algo = e.target instanceof Element && e.target.closest("select[name=algorithm]");
    const option = algo && algo.form && algo.form.querySelector("select[name=size_kind] option[value=merges]");
    if (option && option.dataset[algo.value]) option.textContent = option.dataset[algo.value];
  });

  function togglePresent(force) {
    const lab = document.getElementById("lab");
    if (!lab) return;
    const on = force === undefined ? !lab.classList.contains("present") : force;
    lab.classList.toggle("present", on);
    const btn = document.getElementById("present-toggle");
    if (btn) btn.setAttribute("aria-pressed", on ? "true" : "false");
    try { localStorage.setItem("tp-lab-present", on ? "1" : "0"); } catch (err) { /* private mode */ }
  }

  document.addEventListener("DOMContentLoaded", function () {
    let saved = null;
    try { saved = localStorage.getItem("tp-lab-present"); } catch (err) { /* private mode */ }
    if (saved === "1") togglePresent(true);
    rememberRun();
  });

  // The runs this browser opened (newest first, at most 12): the curves form offers them as one-click additions.
  function rememberRun() {
    const lab = document.getElementById("lab");
    const runs = document.getElementById("curves-runs");
    const box = document.getElementById("recent-runs");
    let recent = [];
    try { recent = JSON.parse(localStorage.getItem("tp-lab-runs") || "[]"); } catch (err) { recent = []; }
    if (!Array.isArray(recent)) recent = [];
    if (lab && lab.dataset.run && document.getElementById("step")) {
      const desc = document.querySelector(".lab-desc");
      const label = desc ? desc.textContent.trim().split(" · ")[0] : "";
      recent = [{ id: lab.dataset.run, label: label }].concat(recent.filter(function (r) { return r && r.id !== lab.dataset.run; })).slice(0, 12);
      try { localStorage.setItem("tp-lab-runs", JSON.stringify(recent)); } catch (err) { /* private mode */ }
    }
    if (!runs || !box) return;
    const others = recent.filter(function (r) { return r.id !== (lab && lab.dataset.run); });
    if (!others.length) return;
    box.append("Add: ");
    others.forEach(function (r) {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "btn btn-small recent-run";
      b.textContent = r.id;
      b.title = r.label;
      b.addEventListener("click", function () {
        const ids = runs.value.split(/\s+/).filter(Boolean);
        if (ids.indexOf(r.id) < 0) runs.value = ids.concat([r.id]).join(" ");
      });
      box.append(b, " ");
    });
  }

  document.addEventListener("keydown", function (e) {
    if (!document.getElementById("step")) return;
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const t = e.target instanceof Element ? e.target : null;
    const tok = t && t.closest("#corpus-tokens > span");
    if (tok && e.key === "Enter") { showTree(tok); e.preventDefault(); return; }
    if (t && t.closest(".tokens")) return;  // arrow keys move between tokens there (static/app.js)
    if (t && t.closest("input, textarea, select, [contenteditable]")) {
      if (!(t.matches("input[type=range]") && (e.key === " " || e.key === "Home" || e.key === "End"))) return;
    }
    if (e.key === "ArrowRight") { nav("next"); }
    else if (e.key === "ArrowLeft") { nav("prev"); }
    else if (e.key === "Home") { nav("first"); }
    else if (e.key === "End") { nav("last"); }
    else if (e.key === " " && !(t && t.closest("button, a"))) { setPlaying(!window.__labPlaying); }
    else if (e.key === "p" || e.key === "P") { togglePresent(); }
    else return;
    e.preventDefault();
  });
})();

// Compare view: "copy to clipboard" for the exports (everything else is htmx), the preset highlight, and the
// reference marker (◉) kept on the reference the table uses.
// A copy button posts the form to its export URL (the same request the download buttons make) and copies the
// answer. Buttons stay hidden where the Clipboard API is missing. Once the user edits the text, it is no
// longer the preset it started from: the preset loses its highlight.
// The reference is one of the ticked tokenizers: the one whose ◉ is chosen, else the first ticked (the server's
// rule, app/services/compare.py reference_of). Unticking the reference moves ◉ to the first ticked one, and choosing
// the ◉ of an unticked tokenizer ticks it, both before htmx sends the form (a capturing listener runs before
// htmx's own); after every swap ◉ is set to the reference the answer names (#compare-stats data-reference).
(function () {
  "use strict";

  function refRadio(form, name) {
    return form.querySelector('input[name="ref"][value="' + CSS.escape(name) + '"]');
  }

  document.addEventListener("change", function (event) {
    const input = event.target;
    if (!(input instanceof HTMLInputElement) || !input.form || input.form.id !== "compare-form") return;
    const form = input.form;
    if (input.name === "t" && !input.checked) {
      const ref = form.querySelector('input[name="ref"]:checked');
      const first = form.querySelector('input[name="t"]:checked');
      if (ref && ref.value === input.value && first) {
        const radio = refRadio(form, first.value);
        if (radio) radio.checked = true;
      }
    } else if (input.name === "ref" && input.checked) {
      const box = form.querySelector('input[name="t"][value="' + CSS.escape(input.value) + '"]');
      if (box && !box.checked) box.checked = true;
    }
  }, true);

  function syncReference() {
    const table = document.getElementById("compare-stats");
    const form = document.getElementById("compare-form");
    if (!table || !form || !table.dataset.reference) return;
    const radio = refRadio(form, table.dataset.reference);
    if (radio && !radio.checked) radio.checked = true;
  }

  document.addEventListener("htmx:afterSwap", syncReference);

  // Typing re-sends the results: before htmx swaps the answer in, empty the old panes' token views and id lists in
  // one step each. Otherwise htmx's swap walks every old element to clean it up, one event per element: thousands
  // of token spans (no htmx attributes among them) and some 60 ms of every keystroke in Chromium.
  document.addEventListener("htmx:beforeSwap", function (event) {
    const target = event.detail.target;
    if (!event.detail.shouldSwap || !(target instanceof Element) || target.id !== "compare-results") return;
    target.querySelectorAll(".pane .tokens, .pane .ids").forEach(function (view) { view.textContent = ""; });
  });

  function setup() {
    if (!(navigator.clipboard && window.fetch)) return;
    document.querySelectorAll("#compare-form button[data-copy]").forEach(function (b) { b.hidden = false; });
  }

  document.addEventListener("DOMContentLoaded", setup);

  document.addEventListener("input", function (event) {
    if (!(event.target instanceof Element) || event.target.id !== "compare-text") return;
    document.querySelectorAll("a.preset.active").forEach(function (a) {
      a.classList.remove("active");
      a.removeAttribute("aria-current");
    });
  });
  document.addEventListener("htmx:afterSettle", setup);

  document.addEventListener("click", function (event) {
    const button = event.target instanceof Element && event.target.closest("button[data-copy]");
    if (!button || !button.form) return;
    const status = button.form.querySelector(".copy-status");
    const say = function (text) { if (status) status.textContent = text; };
    fetch(button.dataset.copy, { method: "POST", body: new FormData(button.form) }) // multipart, as the form
      .then(function (r) {
        return r.text().then(function (body) {
          if (!r.ok) throw new Error(body);
          return body;
        });
      })
      .then(function (body) { return navigator.clipboard.writeText(body); })
      .then(function () { say("Copied " + button.textContent.replace(/^Copy /, "") + "."); })
      .catch(function (err) { say("Could not copy: " + (err && err.message ? err.message : err)); });
  });
})();

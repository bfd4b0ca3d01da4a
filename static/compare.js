// Compare view: "copy to clipboard" for the exports (everything else is htmx), and the preset highlight.
// A copy button posts the form to its export URL (the same request the download buttons make) and copies the
// answer. Buttons stay hidden where the Clipboard API is missing. Once the user edits the text, it is no
// longer the preset it started from: the preset loses its highlight.
(function () {
  "use strict";

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

/* The theme switch: light, dark or auto (the browser's preference), remembered in this browser (localStorage
   "tp-theme"), independent of the system: a projector's room can be dark while the laptop is light. Loaded without
   defer in <head>, so the chosen theme is on <html data-theme> before anything is drawn (no flash); the switch in the
   header (hidden until this script shows it) is wired once the page is read. static/app.css reads data-theme. */
(function () {
  "use strict";
  var KEY = "tp-theme";
  var root = document.documentElement;

  function apply(choice) {
    if (choice === "light" || choice === "dark") root.setAttribute("data-theme", choice);
    else root.removeAttribute("data-theme");
  }

  function saved() {
    try { return localStorage.getItem(KEY); } catch (e) { return null; }  // storage off: auto, every visit
  }

  apply(saved());
  document.addEventListener("DOMContentLoaded", function () {
    var select = document.getElementById("theme-choice");
    if (!select) return;
    var choice = saved();
    select.value = choice === "light" || choice === "dark" ? choice : "auto";
    select.closest(".theme-switch").hidden = false;
    select.addEventListener("change", function () {
      try { localStorage.setItem(KEY, select.value); } catch (e) { /* not remembered, still applied */ }
      apply(select.value);
    });
  });
})();

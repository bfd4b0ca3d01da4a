/* The premium chart: a click on a language's column goes to its row of the table (the chart is one image to a
   screen reader and to the keyboard; the table holds the same numbers, each row reachable on its own). The row is
   the page's target, so its :target style marks it. */
document.addEventListener("click", function (event) {
  "use strict";
  var column = event.target.closest && event.target.closest("#premium-chart rect.column[data-row]");
  if (column && document.getElementById(column.getAttribute("data-row"))) {
    location.hash = column.getAttribute("data-row");
  }
});

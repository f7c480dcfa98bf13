// Draws each chart from the figure its data-chart-url serves (built in Python with plotly), with
// the plotly.js the page loads from this server. The numbers are always in a table beside it.
(function () {
  "use strict";
  function draw(el) {
    if (el.dataset.drawn) return;
    el.dataset.drawn = "1";
    fetch(el.dataset.chartUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) throw new Error("the server answered " + response.status);
        return response.json();
      })
      .then(function (figure) {
        return window.Plotly.newPlot(el, figure.data, figure.layout, { displaylogo: false, responsive: true });
      })
      .then(function () { el.dataset.ready = "1"; })
      .catch(function (error) {
        el.textContent = "The chart could not be drawn (" + error.message + "); the table has every number.";
      });
  }
  function drawAll(root) {
    Array.prototype.forEach.call((root || document).querySelectorAll("[data-chart-url]"), draw);
  }
  document.addEventListener("DOMContentLoaded", function () { drawAll(document); });
  document.addEventListener("htmx:afterSettle", function (event) { drawAll(event.target); });
})();

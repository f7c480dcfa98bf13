// Draws each chart from the figure its data-chart-url serves, or the one its data-figure holds
// (built in Python as plotly's JSON), with the plotly.js the page loads from this server. The
// numbers are always in a table beside it.
(function () {
  "use strict";
  function draw(el) {
    if (el.dataset.drawn) return;
    el.dataset.drawn = "1";
    var figure = el.dataset.figure
      ? Promise.resolve().then(function () { return JSON.parse(el.dataset.figure); })
      : fetch(el.dataset.chartUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) throw new Error("the server answered " + response.status);
        return response.json();
      });
    figure
      .then(function (figure) {
        return window.Plotly.newPlot(el, figure.data, figure.layout, { displaylogo: false, responsive: true });
      })
      .then(function () { el.dataset.ready = "1"; })
      .catch(function (error) {
        el.textContent = "The chart could not be drawn (" + error.message + "); the table has every number.";
      });
  }
  function drawAll(root) {
    Array.prototype.forEach.call((root || document).querySelectorAll("[data-chart-url], [data-figure]"), draw);
  }
  document.addEventListener("DOMContentLoaded", function () { drawAll(document); });
  document.addEventListener("htmx:afterSettle", function (event) { drawAll(event.target); });
})();

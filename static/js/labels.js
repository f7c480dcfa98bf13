// The labeling stream's keys: 1-8 give an outcome, Shift+digit marks one also acceptable, n opens
// the note (Esc leaves it), s skips, u undoes the last label. Each presses a visible button or
// box, so the mouse and a browser without JavaScript reach the same forms.
(function () {
  "use strict";
  function typing(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName) && el.type !== "checkbox");
  }
  function panel() { return document.getElementById("label-panel"); }
  function find(selector) {
    var root = panel();
    return root ? root.querySelector(selector + ":not([disabled])") : null;
  }
  document.addEventListener("keydown", function (event) {
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || !panel()) return;
    var digit = /^Digit([1-9])$/.exec(event.code || "");
    var target = null;
    if (digit && event.shiftKey) {
      target = find('[data-alt-key="' + digit[1] + '"]');
    } else if (digit) {
      target = find('[data-label-key="' + digit[1] + '"]');
    } else if (event.key === "s" || event.key === "u") {
      target = find('[data-label-key="' + event.key + '"]');
    } else if (event.key === "n") {
      var note = find("[data-note]");
      if (note) { note.focus(); event.preventDefault(); event.stopImmediatePropagation(); }
      return;
    }
    if (!target) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    target.click();
  }, true);
})();

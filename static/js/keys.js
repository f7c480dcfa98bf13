// Keyboard shortcuts for the lists and the memory page: j/k move and Enter opens (Gmail, GitHub),
// one key per action (Label Studio), ? lists them. Every shortcut presses a visible button or
// link, so each also works with a mouse, and without JavaScript the forms still post.
(function () {
  "use strict";
  var pending = null; // an action waiting for its reason

  function typing(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }
  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-rows] [data-row]"));
  }
  function currentRow() {
    var el = document.activeElement;
    return el && el.closest ? el.closest("[data-row]") : null;
  }
  function move(step) {
    var all = rows();
    if (!all.length) return;
    var i = all.indexOf(currentRow());
    var next = all[i === -1 ? 0 : Math.min(all.length - 1, Math.max(0, i + step))];
    next.focus();
    next.scrollIntoView({ block: "nearest" });
  }
  function scope() {
    // On a list, a key acts on the row the reviewer moved to, never on one they did not choose.
    if (document.querySelector("[data-rows]")) return currentRow();
    return document.getElementById("memory-state") || document.querySelector("main");
  }
  function say(text) {
    var flash = document.getElementById("flash");
    if (!flash) return;
    var line = document.createElement("p");
    line.className = "hint";
    line.textContent = text;
    flash.replaceChildren(line);
  }
  function press(key) {
    var within = scope();
    var target = within && within.querySelector('[data-key="' + key + '"]:not([disabled])');
    if (!target) return false;
    if (target.hasAttribute("data-needs-reason")) {
      var reason = target.form && target.form.querySelector("[data-reason]");
      if (reason && !reason.value.trim()) {
        pending = target;
        reason.focus();
        say("Type a reason, then press Ctrl+Enter to " + target.value + ".");
        return true;
      }
    }
    target.click();
    return true;
  }
  function openRewrite() {
    var box = document.getElementById("rewrite");
    if (!box) return press("e");
    box.open = true;
    var text = box.querySelector("[data-rewrite]");
    if (text) text.focus();
    return true;
  }
  function showShortcuts() {
    var dialog = document.getElementById("shortcuts");
    if (dialog && !dialog.open) dialog.showModal();
  }

  document.addEventListener("keydown", function (event) {
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        var button = pending && pending.form === event.target.form ? pending : null;
        if (button) { pending = null; button.click(); event.preventDefault(); }
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var handled = true;
    switch (event.key) {
      case "j": move(1); break;
      case "k": move(-1); break;
      case "Enter": {
        var row = currentRow();
        if (row && event.target === row && row.dataset.href) window.location.href = row.dataset.href;
        else handled = false;
        break;
      }
      case "?": showShortcuts(); break;
      case "e": handled = openRewrite(); break;
      case "a": case "f": case "r": case "c": case "n": case "x": case "s": case "u":
        handled = press(event.key); break;
      default: handled = false;
    }
    if (handled) event.preventDefault();
  });

  document.addEventListener("click", function (event) {
    if (event.target.closest && event.target.closest("[data-shortcuts]")) showShortcuts();
  });

  // A swapped row replaces the focused element: keep the reviewer's place in the list.
  var lastRowId = null;
  document.addEventListener("htmx:beforeRequest", function () {
    var row = currentRow();
    lastRowId = row ? row.id : null;
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (lastRowId && (document.activeElement === document.body || !document.activeElement)) {
      var row = document.getElementById(lastRowId);
      if (row) row.focus();
    }
  });

  // htmx asks the hx-confirm of the element that sends the request: for a form, the form, never
  // the button pressed (htmx issue 3291). A button's own question (Forget) is asked here.
  document.addEventListener("htmx:confirm", function (event) {
    var trigger = event.detail.triggeringEvent;
    var button = trigger && trigger.submitter;
    var question = button && button.getAttribute("hx-confirm");
    if (!question || event.detail.question) return; // none, or the form's own (htmx asks it)
    event.preventDefault();
    if (window.confirm(question)) event.detail.issueRequest(true);
  });

  document.addEventListener("DOMContentLoaded", function () {
    if (window.location.hash === "#rewrite") openRewrite();
  });
})();

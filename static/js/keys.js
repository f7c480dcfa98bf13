// Keyboard shortcuts for the lists, the memory page and the review flow: j/k move and Enter opens
// (Gmail, GitHub), one key per action (Label Studio), ? lists them. Every shortcut presses a
// visible button or link, so each also works with a mouse, and without JavaScript the forms post.
//
// A key decides only what a person saw. An action key (a f r c n x s u) is ignored when
//  * it is the browser's auto-repeat of a held key (event.repeat): holding a key is one press;
//  * what it acts on appeared less than FLOOR_MS ago: an htmx swap brought it in (the review
//    flow's next item, a list row after its action, the memory's panel), or, in the review flow,
//    the page loaded with it (a page opened by hand is not a flow's next item);
//  * that form's request is still in flight, or htmx has not wired the new content yet (it does
//    when the page has loaded and when a swap settles): pressed then, the button would post the
//    form without htmx, a full page load deciding an item nobody had seen.
// FLOOR_MS is 200 ms, the quickest simple visual reaction (a key pressed the moment anything
// appears, with nothing to read or choose: 190-250 ms on average, rarely under 150): a key
// sooner than that was pressed before the item could be seen, like the second of a double press
// (30-200 ms apart, it lands on an item shown for less than the gap). It is no higher so that a
// deliberate reviewer pressing one key every 400 ms is never slowed while the next item arrives
// within 200 ms (issue 28 measured 65 ms median, p95 99-178 ms). The server refuses a decision
// in the flow under the same floor (workflow/flow.py, READ_FLOOR_MS); what this script lets pass
// passes there too: the server renders before the browser shows, and hears after the key.
// j and k may repeat: holding j walks the list.
//
// A click on the review flow's buttons meets the same floor and in-flight check (a double click
// lands its second click on the next item's button); anywhere, a click on a button whose form is
// still sending is dropped. A key that moves focus into a text box (r asks for a reason, e opens
// the rewrite) is not typed there, nor is its repeat, nor anything typed in the FLOOR_MS before
// the box could be seen; Esc leaves the box and drops the action that waited for it.
(function () {
  "use strict";
  var FLOOR_MS = 200;
  var ACTION_KEYS = "afrcnxsu";
  var pending = null; // an action waiting for its reason
  var shownAt = new WeakMap(); // what htmx swapped in, and when
  var loadedAt = performance.now();
  var box = null; // the text box a key moved focus into: {field, at, key}, key null once released

  function typing(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }
  function tooSoon(el, sinceLoad) {
    var now = performance.now();
    if (sinceLoad && now - loadedAt < FLOOR_MS) return true;
    for (var node = el; node; node = node.parentElement) {
      if (now - (shownAt.get(node) || -Infinity) < FLOOR_MS) return true;
    }
    return false;
  }
  function busy(el) {
    return Boolean(
      el.closest(".htmx-request, .htmx-swapping, .htmx-settling") ||
        (el.form && el.form.classList.contains("htmx-request"))
    );
  }
  function focusBox(field, key) {
    field.focus();
    box = { field: field, at: performance.now(), key: key };
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
    var early = document.readyState === "loading" || tooSoon(target, Boolean(target.closest("[data-flow]")));
    if (early || busy(target)) return true; // not yet seen, or not ready: ignored
    if (target.hasAttribute("data-needs-reason")) {
      var reason = target.form && target.form.querySelector("[data-reason]");
      if (reason && !reason.value.trim()) {
        pending = target;
        focusBox(reason, key);
        say("Type a reason, then press Ctrl+Enter to " + target.value + ".");
        return true;
      }
    }
    target.click();
    return true;
  }
  function openRewrite() {
    var details = document.getElementById("rewrite");
    if (!details) return press("e");
    details.open = true;
    var text = details.querySelector("[data-rewrite]");
    if (text) focusBox(text, "e");
    return true;
  }
  function showShortcuts() {
    var dialog = document.getElementById("shortcuts");
    if (dialog && !dialog.open) dialog.showModal();
  }
  function inBox(event) {
    var field = event.target;
    var fresh =
      box && box.field === field && (event.key === box.key || performance.now() - box.at < FLOOR_MS);
    if (fresh && (event.key.length === 1 || event.key === "Enter")) {
      event.preventDefault(); // the key that moved focus here, its repeat, or typed before it showed
      return;
    }
    if (event.key === "Escape") {
      field.blur();
      if (pending && pending.form === field.form) {
        say("Nothing was done: press " + pending.getAttribute("data-key") + " again to " + pending.value + ".");
        pending = null;
      }
    }
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      var button = pending && pending.form === field.form ? pending : null;
      if (button && !event.repeat && !busy(button)) {
        pending = null;
        button.click();
      }
      if (button) event.preventDefault();
    }
  }

  document.addEventListener("keydown", function (event) {
    if (typing(event.target)) return inBox(event);
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.repeat && event.key !== "j" && event.key !== "k") {
      if ((ACTION_KEYS + "e?").indexOf(event.key) !== -1) event.preventDefault();
      return;
    }
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
      default:
        handled = event.key.length === 1 && ACTION_KEYS.indexOf(event.key) !== -1 && press(event.key);
    }
    if (handled) event.preventDefault();
  });

  // Before htmx or the form hears it: a click that lands on what is still being sent, or on the
  // review flow's next item before it could be seen, does nothing.
  document.addEventListener(
    "click",
    function (event) {
      var button = event.target.closest && event.target.closest("button");
      if (!button || (button.type !== "submit" && !button.hasAttribute("hx-post"))) return;
      if (busy(button) || (button.closest("[data-flow]") && tooSoon(button, false))) {
        event.preventDefault();
        event.stopImmediatePropagation();
      }
    },
    true
  );

  document.addEventListener("keyup", function (event) {
    if (box && event.key === box.key) box.key = null;
  });

  document.addEventListener("click", function (event) {
    if (event.target.closest && event.target.closest("[data-shortcuts]")) showShortcuts();
  });

  document.addEventListener("htmx:afterSwap", function (event) {
    shownAt.set(event.target, performance.now());
    // The review flow's next item: focus on its heading (its live region, #flash, says what was
    // done and what comes next), never left on <body> where a screen reader loses its place.
    if (event.target.matches && event.target.matches("[data-flow]")) {
      var heading = event.target.querySelector("h1[tabindex], .empty[tabindex]");
      if (heading) heading.focus();
    }
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
    loadedAt = performance.now();
    if (window.location.hash === "#rewrite") openRewrite();
  });
})();

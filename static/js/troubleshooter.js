// The troubleshooter's enhancements. Every step works without this file: links and forms are real
// GET requests. With htmx, only the step panel is swapped; this file moves focus to the new question,
// keeps the window title in step, and wires the "Copy script" button.
(function () {
  "use strict";

  var PANEL_ID = "wizard-step";

  // Focus the new question (or diagnosis) heading, so keyboard and screen-reader users land on it.
  function focusStep(panel) {
    var heading = panel.querySelector("#step-focus");
    var step = panel.querySelector(".step[data-title]");
    if (step) { document.title = step.getAttribute("data-title"); }
    if (heading) { heading.focus(); }
  }

  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail && event.detail.target;
    if (target && target.id === PANEL_ID) { focusStep(target); }
  });

  // Back and Forward restore a page snapshot; put focus where the restored step is.
  document.addEventListener("htmx:historyRestore", function () {
    var panel = document.getElementById(PANEL_ID);
    if (panel) { focusStep(panel); }
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button.copy-script") : null;
    if (!button) { return; }
    var source = document.getElementById(button.getAttribute("data-copy-target"));
    var status = button.parentNode.querySelector(".copy-status");
    if (!source) { return; }
    var pre = source.querySelector("pre") || source;
    window.hangDoctorCopy(pre.textContent).then(function () {
      if (status) { status.textContent = "Copied to the clipboard."; }
    }, function () {
      if (status) { status.textContent = "Copy failed: select the script and copy it by hand, or download it."; }
    });
  });

  // The copy button is hidden in the HTML, so that without JavaScript nobody sees a button that does nothing.
  function showCopyButtons(root) {
    var buttons = (root || document).querySelectorAll("button.copy-script[hidden]");
    for (var i = 0; i < buttons.length; i++) { buttons[i].hidden = false; }
  }

  document.addEventListener("htmx:load", function (event) { showCopyButtons(event.detail && event.detail.elt); });
  document.addEventListener("DOMContentLoaded", function () { showCopyButtons(document); });
})();

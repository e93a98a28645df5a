// Progressive enhancements only: every page works without this file.
(function () {
  "use strict";

  // Clicking a section's "#" permalink also copies the full URL, so it can be pasted into a wiki.
  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a.headerlink") : null;
    if (!link || !navigator.clipboard) { return; }
    var url = new URL(link.getAttribute("href"), window.location.href).href;
    navigator.clipboard.writeText(url).then(function () {
      link.classList.add("copied");
      window.setTimeout(function () { link.classList.remove("copied"); }, 1500);
    }, function () { /* clipboard refused: the link still navigates */ });
  });

  // After htmx swaps in results, move focus to them so keyboard and screen-reader users land there.
  document.addEventListener("htmx:afterSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (target && target.id === "results") {
      // The answer first: the best case (or what to do next), scrolled to the top of the viewport.
      var answer = target.querySelector("#answer") || target.querySelector("h2, h3");
      if (answer) {
        if (!answer.hasAttribute("tabindex")) { answer.setAttribute("tabindex", "-1"); }
        answer.focus({preventScroll: true});
        answer.scrollIntoView({block: "start"});
      }
    }
  });

  // htmx does not swap error responses by default; show our friendly 400/413 messages in place.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var status = event.detail.xhr.status;
    if (status === 400 || status === 403 || status === 409 || status === 413) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  // A multi-line paste into the header search box is a log: send it to the diagnosis with its line
  // breaks (a one-line search field would flatten them into one query).
  document.addEventListener("paste", function (event) {
    var input = event.target;
    if (!input || input.id !== "header-q" || !event.clipboardData) { return; }
    var text = event.clipboardData.getData("text");
    if (!text || text.trim().indexOf("\n") === -1) { return; }
    event.preventDefault();
    var form = document.createElement("form");
    form.method = "post";
    form.action = "/diagnose";
    form.className = "pasted-log-form";
    var token = document.querySelector("input[name=csrfmiddlewaretoken]");
    var csrf = document.createElement("input");
    csrf.type = "hidden";
    csrf.name = "csrfmiddlewaretoken";
    csrf.value = token ? token.value : csrfFromCookie();
    var log = document.createElement("textarea");
    log.name = "log";
    log.hidden = true;
    log.value = text;
    form.appendChild(csrf);
    form.appendChild(log);
    document.body.appendChild(form);
    form.submit();
  });

  function csrfFromCookie() {
    try {
      var headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}");
      if (headers["X-CSRFToken"]) { return headers["X-CSRFToken"]; }
    } catch (err) { /* fall back to the cookie */ }
    var match = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  // "Copy as Markdown" on a shared report; without JavaScript the text area and the .md link remain.
  document.querySelectorAll("button.copy-markdown").forEach(function (button) {
    if (!navigator.clipboard) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      var source = document.getElementById(button.getAttribute("data-copy-target"));
      var status = button.parentNode.querySelector(".copy-status");
      navigator.clipboard.writeText(source.value).then(function () {
        if (status) { status.textContent = "Copied."; }
      }, function () {
        if (status) { status.textContent = "Copy refused by the browser: select the text below."; }
      });
    });
  });
})();

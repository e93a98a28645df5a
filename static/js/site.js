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
      var heading = target.querySelector("h2, h3");
      if (heading) {
        heading.setAttribute("tabindex", "-1");
        heading.focus();
      }
    }
  });

  // htmx does not swap error responses by default; show our friendly 400/413 messages in place.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var status = event.detail.xhr.status;
    if (status === 400 || status === 413) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();

// Progressive enhancements only: every page works without this file.
(function () {
  "use strict";

  // Copy text: the async clipboard where the page is a secure context, otherwise (a plain-HTTP intranet host)
  // an off-screen text area and execCommand.
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.className = "visually-hidden";
      document.body.appendChild(area);
      area.select();
      var copied = false;
      try { copied = document.execCommand("copy"); } catch (error) { copied = false; }
      document.body.removeChild(area);
      if (copied) { resolve(); } else { reject(new Error("copy refused")); }
    });
  }

  // The troubleshooter's "Copy script" uses the same function (base.html loads this file first).
  window.hangDoctorCopy = copyText;

  // One polite live region (in base.html) says what just happened, for screen-reader users.
  function announce(message) {
    var region = document.getElementById("announcer");
    if (!region) { return; }
    region.textContent = "";
    window.setTimeout(function () { region.textContent = message; }, 50);
  }

  // Clicking a section's "#" permalink also copies the full URL, so it can be pasted into a wiki; the link
  // still moves to the section.
  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a.headerlink") : null;
    if (!link) { return; }
    var url = new URL(link.getAttribute("href"), window.location.href);
    url.search = "";
    var name = link.getAttribute("data-section") || "this section";
    copyText(url.href).then(function () {
      link.classList.add("copied");
      announce("Link to the section \u201c" + name + "\u201d copied.");
      window.setTimeout(function () { link.classList.remove("copied"); }, 2000);
    }, function () {
      announce("The browser refused to copy: the link to \u201c" + name + "\u201d is in the address bar.");
    });
  });

  // A Copy button on every code block of a case page and of the command-line panel. Without JavaScript
  // there is no button, and the block can still be selected.
  function codeOf(pre) {
    var code = pre.querySelector("code") || pre;
    return code.textContent.replace(/\n$/, "");
  }

  function addCopyButtons(root) {
    var blocks = (root || document).querySelectorAll(".case-body pre, .cli-panel pre, .do-first pre");
    for (var i = 0; i < blocks.length; i++) {
      var pre = blocks[i];
      var holder = pre.parentNode;
      if (!holder.classList.contains("highlight")) {
        holder = document.createElement("div");
        holder.className = "code-block";
        pre.parentNode.insertBefore(holder, pre);
        holder.appendChild(pre);
      }
      if (holder.querySelector(":scope > button.copy-code")) { continue; }
      holder.classList.add("has-copy");
      var button = document.createElement("button");
      button.type = "button";
      button.className = "copy-code";
      button.textContent = "Copy";
      button.setAttribute("aria-label", "Copy code");
      holder.insertBefore(button, pre);
    }
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button.copy-code") : null;
    if (!button) { return; }
    var pre = button.parentNode.querySelector("pre");
    if (!pre) { return; }
    copyText(codeOf(pre)).then(function () {
      button.textContent = "Copied";
      button.classList.add("copied");
      announce("Code copied to the clipboard.");
      window.setTimeout(function () { button.textContent = "Copy"; button.classList.remove("copied"); }, 2000);
    }, function () {
      announce("The browser refused to copy: select the code and copy it by hand.");
    });
  });

  // The table of contents marks the section being read. Progressive: without IntersectionObserver the
  // list is still a list of links.
  function watchSections() {
    var toc = document.querySelector("nav.toc");
    if (!toc || !("IntersectionObserver" in window)) { return; }
    var links = toc.querySelectorAll("a[href^='#']");
    var entries = [];
    for (var i = 0; i < links.length; i++) {
      var target = document.getElementById(decodeURIComponent(links[i].getAttribute("href").slice(1)));
      if (target) { entries.push({link: links[i], target: target}); }
    }
    if (!entries.length) { return; }
    var current = null;
    // The section being read is the last one whose heading has passed a line just below the top edge.
    function readingLine() { return Math.min(120, window.innerHeight * 0.3); }
    function update() {
      var line = readingLine();
      var found = null;
      for (var j = 0; j < entries.length; j++) {
        if (entries[j].target.getBoundingClientRect().top <= line) { found = entries[j]; } else { break; }
      }
      if ((window.innerHeight + window.scrollY) >= document.documentElement.scrollHeight - 2) {
        found = entries[entries.length - 1];
      }
      if (found === current) { return; }
      if (current) {
        current.link.removeAttribute("aria-current");
        current.link.classList.remove("current");
      }
      var parents = toc.querySelectorAll(".current-parent");
      for (var k = 0; k < parents.length; k++) { parents[k].classList.remove("current-parent"); }
      current = found;
      if (current) {
        current.link.setAttribute("aria-current", "location");
        current.link.classList.add("current");
        // Keep the marked entry visible inside a table of contents that scrolls on its own.
        if (toc.scrollHeight > toc.clientHeight) {
          var top = current.link.getBoundingClientRect().top - toc.getBoundingClientRect().top + toc.scrollTop;
          if (top < toc.scrollTop || top > toc.scrollTop + toc.clientHeight - 40) {
            toc.scrollTop = Math.max(0, top - toc.clientHeight / 3);
          }
        }
        var outer = current.link.parentNode.parentNode.closest("li");
        if (outer && toc.contains(outer)) { outer.querySelector(":scope > a").classList.add("current-parent"); }
      }
    }
    var observer = new IntersectionObserver(update, {
      rootMargin: "0px 0px " + (readingLine() - window.innerHeight) + "px 0px", threshold: [0, 1]
    });
    entries.forEach(function (entry) { observer.observe(entry.target); });
    var footer = document.querySelector(".site-footer");
    if (footer) { new IntersectionObserver(update).observe(footer); }  // the end of the page: the last section
    window.addEventListener("hashchange", update);
    window.addEventListener("resize", update);
    update();
  }

  // A search result link carries its words (?hl=...): mark them on the page, starting with the section
  // the link points at. A word matches at the start of a word or of a part of one (the IFNAME of
  // NCCL_SOCKET_IFNAME, the NCCL of ProcessGroupNCCL), never inside one (the "all" of "install").
  function highlightFromQuery() {
    var params = new URLSearchParams(window.location.search);
    var raw = (params.get("hl") || "").trim();
    var body = document.querySelector(".case-body");
    if (!raw || !body) { return; }
    var terms = raw.split(/\s+/).filter(function (t) { return t.length >= 2; }).slice(0, 8);
    if (!terms.length) { return; }
    var pattern = new RegExp(terms.map(function (t) {
      return t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    }).sort(function (a, b) { return b.length - a.length; }).join("|"), "gi");
    var walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT, {
      acceptNode: function (node) {
        var parent = node.parentNode;
        if (!parent || parent.closest("mark, button, script, style, .headerlink, .visually-hidden")) {
          return NodeFilter.FILTER_REJECT;
        }
        return NodeFilter.FILTER_ACCEPT;
      }
    });
    var nodes = [];
    while (walker.nextNode()) { nodes.push(walker.currentNode); }
    var count = 0;
    nodes.forEach(function (node) {
      var text = node.nodeValue;
      var match;
      var last = 0;
      var pieces = [];
      pattern.lastIndex = 0;
      while ((match = pattern.exec(text)) !== null) {
        var at = match.index;
        var before = at > 0 ? text.charAt(at - 1) : "";
        var first = text.charAt(at);
        var starts = !before || !/[A-Za-z0-9]/.test(before) || (/[a-z]/.test(before) && /[A-Z]/.test(first)) ||
          (/[0-9]/.test(before) !== /[0-9]/.test(first));
        if (!starts) { continue; }
        pieces.push(document.createTextNode(text.slice(last, at)));
        var mark = document.createElement("mark");
        mark.className = "search-hl";
        mark.textContent = match[0];
        pieces.push(mark);
        last = at + match[0].length;
        count++;
      }
      if (!pieces.length) { return; }
      pieces.push(document.createTextNode(text.slice(last)));
      var fragment = document.createDocumentFragment();
      pieces.forEach(function (piece) { fragment.appendChild(piece); });
      node.parentNode.replaceChild(fragment, node);
    });
    if (!count) { return; }
    var note = document.createElement("p");
    note.className = "hl-note";
    note.appendChild(document.createTextNode(count + " mention" + (count === 1 ? "" : "s") + " of \u201c" +
      terms.join(" ") + "\u201d highlighted. "));
    var clear = document.createElement("button");
    clear.type = "button";
    clear.className = "link-button";
    clear.textContent = "Remove the highlighting";
    clear.addEventListener("click", function () {
      var marks = body.querySelectorAll("mark.search-hl");
      for (var m = 0; m < marks.length; m++) { marks[m].replaceWith(document.createTextNode(marks[m].textContent)); }
      body.normalize();
      note.remove();
    });
    note.appendChild(clear);
    body.insertBefore(note, body.firstChild);
  }

  // "/" focuses the search box (the home page's live one where there is one), as on GitHub and MkDocs.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) { return; }
    var active = document.activeElement;
    if (active && (active.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName))) { return; }
    var box = document.querySelector("[data-slash-target]") || document.getElementById("header-q");
    if (!box) { return; }
    event.preventDefault();
    box.focus();
    box.select();
  });

  // The case list's filter: only the tags chosen go into the URL, written as the links write them
  // (tag=phase:init, not tag=&tag=phase%3Ainit). Without JavaScript the server redirects to the same URL.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.classList || !form.classList.contains("tag-filter")) { return; }
    var params = [];
    var selects = form.querySelectorAll("select[name=tag]");
    for (var i = 0; i < selects.length; i++) {
      if (selects[i].value) { params.push("tag=" + encodeURIComponent(selects[i].value).replace(/%3A/gi, ":")); }
    }
    event.preventDefault();
    window.location.assign(form.getAttribute("action") + (params.length ? "?" + params.join("&") : ""));
  });

  document.addEventListener("DOMContentLoaded", function () {
    addCopyButtons(document);
    watchSections();
    highlightFromQuery();
  });

  // After htmx swaps in results, move focus to them so keyboard and screen-reader users land there.
  document.addEventListener("htmx:afterSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (target && target.id === "live-hits") {
      // Search as you type: say how many pages matched, without moving focus from the box.
      var summary = target.querySelector("h2");
      announce(summary ? summary.textContent.replace(/\s+/g, " ").trim() : "");
      return;
    }
    if (target && target.id === "results") {
      // A refused paste or upload: tie the message to its field, as the page without JavaScript does.
      document.querySelectorAll("[aria-invalid][data-error-tied]").forEach(function (field) {
        field.removeAttribute("aria-invalid");
        field.setAttribute("aria-describedby", field.getAttribute("data-error-tied"));
        field.removeAttribute("data-error-tied");
      });
      var refusal = target.querySelector("[data-error-for]");
      var field = refusal ? document.getElementById(refusal.getAttribute("data-error-for")) : null;
      if (field) {
        var described = field.getAttribute("aria-describedby") || "";
        field.setAttribute("data-error-tied", described);
        field.setAttribute("aria-describedby", (refusal.id + " " + described).trim());
        field.setAttribute("aria-invalid", "true");
      }
      // The answer first: the best case (or what to do next), scrolled to the top of the viewport.
      var answer = target.querySelector("#answer") || target.querySelector("h2, h3");
      if (answer) {
        if (!answer.hasAttribute("tabindex")) { answer.setAttribute("tabindex", "-1"); }
        answer.focus({preventScroll: true});
        answer.scrollIntoView({block: "start"});
      }
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
    form.action = input.form.getAttribute("data-diagnose-url");
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

  // "Copy as Markdown" on a shared report, with the code blocks' fallback on a plain-HTTP host (no async
  // clipboard there); without JavaScript the button stays hidden and the text area and the .md link remain.
  document.querySelectorAll("button.copy-markdown").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () {
      var source = document.getElementById(button.getAttribute("data-copy-target"));
      var status = button.parentNode.querySelector(".copy-status");
      copyText(source.value).then(function () {
        if (status) { status.textContent = "Copied."; }
      }, function () {
        if (status) { status.textContent = "Copy refused by the browser: select the text below."; }
      });
    });
  });

  // A chosen log folder: the upload itself carries bare file names, so each file's path inside the folder goes
  // along in a `folder_path` field, in the files' order (kb/log_input.py reads the two together). torchrun's
  // <rank>/stdout.log then keeps the folder that names its rank.
  document.addEventListener("change", function (event) {
    var input = event.target;
    if (!input.matches || !input.matches("input[type=file][name=folder]") || !input.form) { return; }
    var form = input.form;
    form.querySelectorAll("input.folder-path").forEach(function (old) { old.remove(); });
    Array.prototype.forEach.call(input.files, function (file) {
      var path = document.createElement("input");
      path.type = "hidden";
      path.name = "folder_path";
      path.className = "folder-path";
      path.value = file.webkitRelativePath || file.name;
      form.appendChild(path);
    });
  });
})();

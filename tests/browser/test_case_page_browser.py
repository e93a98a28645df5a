"""Case pages in a real browser (issue 12): one-click copy of every code block, a table of contents that marks
the section being read, "#" permalinks with a name and an announced copy (on plain HTTP too), anchors that
clear the top edge, a print style readable from dark mode, the table of contents before the metadata on a
phone; and axe-core finds no violation of any impact on any kb page kind, light and dark."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from tests.kb.web.test_timeouts import TRAINING_ARGS, WATCHDOG

pytestmark = pytest.mark.browser

SLUG = "llama3-fsdp-allgather-timeout"
AXE = (Path(__file__).resolve().parent / "vendor" / "axe-core-4.11.0.min.js").read_text()
_FENCE_RE = re.compile(r"^( *)```[^\n]*\n(.*?)\n\1```", re.M | re.S)


def fenced_blocks(slug: str) -> list[str]:
    """The code blocks of a case file as written, in order (fences inside list items are dedented)."""
    text = (Path(settings.CONTENT_DIR) / "cases" / f"{slug}.md").read_text()
    body = text.split("\n---", 2)[-1]
    blocks = []
    for indent, code in _FENCE_RE.findall(body):
        blocks.append("\n".join(line[len(indent) :] if line.startswith(indent) else line for line in code.split("\n")))
    return blocks


def open_case(browser_page, suffix: str = ""):
    page = browser_page.page
    page.goto(f"{browser_page.base_url}/kb/{SLUG}/{suffix}")
    page.wait_for_selector(".case-body button.copy-code")
    return page


def test_every_code_block_has_a_copy_button_that_copies_the_exact_code(browser_page):
    page = open_case(browser_page)
    blocks = page.locator(".case-body pre")
    assert blocks.count() == page.locator(".case-body button.copy-code").count() >= 5
    written = fenced_blocks(SLUG)
    for index in (0, 3, blocks.count() - 1):
        button = page.locator(".case-body button.copy-code").nth(index)
        button.click()
        page.wait_for_function("() => document.getElementById('announcer').textContent.includes('copied')")
        copied = page.evaluate("() => navigator.clipboard.readText()")
        assert copied == written[index], f"block {index}: clipboard differs from the case file"
        assert button.inner_text() == "Copied"
    assert browser_page.console_errors == []


def test_copy_works_on_a_plain_http_host_without_the_async_clipboard(browser_page):
    """An intranet host over plain HTTP is not a secure context: no navigator.clipboard. The copy falls back."""
    page = browser_page.page
    page.add_init_script(
        "Object.defineProperty(window, 'isSecureContext', {value: false});"
        "Object.defineProperty(Navigator.prototype, 'clipboard', {get: () => undefined});"
    )
    page.goto(f"{browser_page.base_url}/kb/{SLUG}/")
    page.wait_for_selector(".case-body button.copy-code")
    assert page.evaluate("() => navigator.clipboard === undefined && !window.isSecureContext")
    page.locator(".case-body button.copy-code").first.click()
    page.wait_for_function("() => document.getElementById('announcer').textContent.includes('copied')")
    page.locator("a.headerlink[href='#fix-2']").click()
    page.wait_for_function("() => document.getElementById('announcer').textContent.includes('Link to the section')")
    reader = page.context.new_page()  # a page with the real clipboard API, to read what was copied
    reader.goto(f"{browser_page.base_url}/kb/")
    assert reader.evaluate("() => navigator.clipboard.readText()") == f"{browser_page.base_url}/kb/{SLUG}/#fix-2"


def test_permalink_has_a_name_and_its_copy_is_announced(browser_page):
    page = open_case(browser_page)
    link = page.get_by_role("link", name=re.compile(r"^Link to this section: 2\. See where each rank"))
    assert link.count() == 1 and link.get_attribute("href") == "#fix-2"
    link.click()
    page.wait_for_function("() => document.getElementById('announcer').textContent.includes('copied')")
    assert page.get_attribute("#announcer", "aria-live") == "polite"
    assert page.evaluate("() => navigator.clipboard.readText()") == f"{browser_page.base_url}/kb/{SLUG}/#fix-2"
    assert page.url.endswith("#fix-2")


def test_the_table_of_contents_nests_fix_steps_and_marks_the_section_being_read(browser_page):
    page = open_case(browser_page)
    assert page.locator("nav.toc > ol > li > ol a[href='#fix-2']").count() == 1
    assert page.locator("nav.toc > ol > li > ol a[href='#cause-1']").count() == 1
    page.evaluate("() => document.getElementById('fix-2').scrollIntoView()")
    page.wait_for_function(
        "() => document.querySelector(\"nav.toc a[href='#fix-2']\").getAttribute('aria-current') === 'location'"
    )
    assert page.locator("nav.toc a[aria-current]").count() == 1
    assert "current-parent" in page.get_attribute("nav.toc a[href='#fix']", "class")
    page.evaluate("() => document.getElementById('prevention').scrollIntoView()")
    page.wait_for_function(
        "() => document.querySelector(\"nav.toc a[href='#prevention']\").getAttribute('aria-current') === 'location'"
    )
    assert page.locator("nav.toc a[aria-current]").count() == 1


def test_anchored_headings_do_not_sit_flush_at_the_top(browser_page):
    page = open_case(browser_page, "#fix-3")
    assert page.evaluate("() => parseFloat(getComputedStyle(document.getElementById('fix-3')).scrollMarginTop)") >= 12
    page.wait_for_function("() => Math.abs(document.getElementById('fix-3').getBoundingClientRect().top - 20) < 8")


def test_on_a_phone_the_table_of_contents_comes_before_the_metadata(browser_page):
    page = browser_page.page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{browser_page.base_url}/kb/{SLUG}/")
    toc = page.locator("details.toc-drawer").bounding_box()
    meta = page.locator("details.case-about-drawer").bounding_box()
    do_first = page.locator(".do-first").bounding_box()
    assert do_first["y"] < toc["y"] < meta["y"]
    assert toc["y"] < 1000, "the table of contents starts on the first screen"
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390


CONTRAST_JS = """() => {
  function rgb(value) { const m = value.match(/[\\d.]+/g).map(Number); return {r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1}; }
  function lum(c) { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); }
  function background(el) { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor); if (c.a > 0) return c; }
    return {r: 255, g: 255, b: 255, a: 1}; }
  let worst = 99, where = "";
  document.querySelectorAll(".case-body pre span, .case-body pre code, .case-body p, .case-body :not(pre) > code").forEach(el => {
    if (!el.textContent.trim()) return;
    const fg = lum(rgb(getComputedStyle(el).color)), bg = lum(background(el));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    if (ratio < worst) { worst = ratio; where = el.className + " " + el.textContent.slice(0, 30); }
  });
  return [worst, where];
}"""


def test_printing_from_dark_mode_gives_readable_code(browser_page):
    page = open_case(browser_page)
    page.emulate_media(color_scheme="dark")
    screen_bg = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    assert screen_bg != "rgb(255, 255, 255)", "the screen really is in dark mode"
    page.emulate_media(media="print", color_scheme="dark")
    assert page.evaluate("() => getComputedStyle(document.body).backgroundColor") == "rgb(255, 255, 255)"
    worst, where = page.evaluate(CONTRAST_JS)
    assert worst >= 4.5, f"contrast {worst:.2f} for {where}"
    assert page.evaluate("() => getComputedStyle(document.querySelector('.copy-code')).display") == "none"


PAGES = {
    "home": "/",
    "case list": "/kb/",
    "case list filtered": "/kb/?tag=phase:checkpoint",
    "case page": f"/kb/{SLUG}/",
    "search with hits": "/search?q=NCCL_SOCKET_IFNAME",
    "search without hits": "/search?q=infinband_hca",
    "search for nothing": "/search?q=zzqxv",
    "harmless list": "/kb/harmless/",
    "404": "/kb/no-such-case/",
    "highlighted case": "/kb/nccl-socket-ifname-wrong-interface/?hl=nccl_socket_ifname#fix-3",
}


WATCHDOG_LINE = (
    "[rank3]:[E1107 09:22:51.410233 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=48213, OpType=_ALLGATHER_BASE, NumelIn=54581248, NumelOut=218324992, Timeout(ms)=600000) ran for "
    "600084 milliseconds before timing out."
)


def wizard_pages() -> dict[str, str]:
    """The troubleshooter's page kinds: its index, a question, the hand-off from a log (answers listed, marked
    from your log), a question asked again by Change, and a leaf with its script."""
    from urllib.parse import quote

    from django.conf import settings
    from troubleshooter.library import library_read
    from troubleshooter.links import step_url, wizard_url_for_facts
    from troubleshooter.tree_model import tree_walk

    tree = library_read(settings.CONTENT_DIR).trees["hang"]
    handoff = wizard_url_for_facts(
        {"stage": "compiling and loading fused kernels", "frameworks": ["megatron-lm"], "launcher": "srun"}
    )
    first_answer = next(iter(next(iter(tree_walk(tree)))))  # the first question of the first complete path
    return {
        "diagnosis results": "/search?q=" + quote(WATCHDOG_LINE),
        "wizard index": "/troubleshoot/",
        "wizard question": "/troubleshoot/hang/",
        "wizard hand-off": handoff,
        "wizard change": handoff + f"&_change={first_answer}",
        "wizard leaf": step_url("hang", next(iter(tree_walk(tree)))),
    }


PASTED_LOG = (Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "fsdp_rank2_behind_torch25.log").read_text(
    errors="replace"
)


# A hang no case explains, with a Trainer timeout that never reached the process group: the results show the
# timeouts table, its note and the capture-next-time link.
UNEXPLAINED_LOG = TRAINING_ARGS.format(seconds=5400) + WATCHDOG.format(ms=600000, ran=600083)
PASTES = {"results swapped in": PASTED_LOG, "results with timeouts": UNEXPLAINED_LOG}


def _open_kind(browser_page, kind: str) -> None:
    """Open a page kind; "results swapped in" is the home page after htmx has swapped a diagnosis into it."""
    page = browser_page.page
    if kind in PASTES:
        page.goto(browser_page.base_url + "/")
        page.fill("#log", PASTES[kind])
        page.click("form.diagnose-form button[type=submit]")
        page.wait_for_selector("#answer h2")
    else:
        page.goto(browser_page.base_url + (PAGES.get(kind) or wizard_pages()[kind]))


@pytest.mark.parametrize(
    "kind",
    list(PAGES)
    + ["diagnosis results", "results swapped in", "results with timeouts", "wizard index", "wizard question", "wizard hand-off"]
    + ["wizard change", "wizard leaf"],
)
def test_axe_finds_no_violation_of_any_impact_in_light_or_dark(browser_page, kind):
    """Both colour schemes on one load: the media query switches live, so axe sees each scheme's colours."""
    page = browser_page.page
    _open_kind(browser_page, kind)
    page.evaluate(AXE)  # through the DevTools protocol: the page's CSP does not apply to it
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        result = json.loads(page.evaluate("async () => JSON.stringify(await axe.run(document, {resultTypes: ['violations']}))"))
        found = [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3]) for v in result["violations"]]
        assert found == [], f"{scheme}: {json.dumps(found)}"
    assert browser_page.console_errors == []

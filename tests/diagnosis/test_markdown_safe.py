"""Log text in "Copy as Markdown" and `/d/<id>.md` is never a live link, image or HTML, and cannot close its code
block; control and bidirectional characters are shown as visible escapes in Markdown and HTML (issue 34: B8, B17)."""

from __future__ import annotations

import html as html_module
import io
import re
import tarfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from markdown_it import MarkdownIt

from kb.models import Report
from diagnosis.markdown_safe import code_span, fenced, visible_controls
from tests.kb.web.test_reports import MARKER, share
from tests.kb.web.test_results_page import sixty_four_rank_log

RENDER = MarkdownIt("commonmark").enable("table")
EVIL_LINK = "[Click to fix](https://evil.example/phish)"
EVIL_IMAGE = "![t](https://evil.example/track.png)"
EVIL_HTML = "<img src=x onerror=alert(1)>"


def rendered(markdown: str) -> str:
    return RENDER.render(markdown)


def test_a_code_span_keeps_a_link_image_and_html_as_text():
    html = rendered("First failure: " + code_span(f"ValueError: {EVIL_LINK} {EVIL_IMAGE} {EVIL_HTML}"))
    assert "<a " not in html and "<img" not in html
    assert "<code>ValueError: [Click to fix](https://evil.example/phish)" in html


@pytest.mark.parametrize("text", ["a ` b", "``x``", "`", "ends with `", "a ``` b ```` c"])
def test_a_code_span_holds_backticks_without_closing_early(text):
    html = rendered(code_span(text) + " after")
    assert html == f"<p><code>{text}</code> after</p>\n"


def test_a_code_span_writes_newlines_as_escapes():
    assert code_span("rank0\n# Injected heading") == "`rank0\\n# Injected heading`"


def test_a_fenced_block_cannot_be_closed_by_a_fence_or_a_newline_in_a_line():
    lines = ["rank0\n```\n# Injected heading\n" + EVIL_LINK + "\n```\n.log:1: timeout", "```` four", "plain"]
    html = rendered(fenced(lines) + "\n\nafter")
    assert "<h1>" not in html and "<a " not in html
    assert html.count("<pre>") == 1 and html.endswith("<p>after</p>\n")


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("abc\u202edef", "abc\\u202edef"),
        ("\u2066isolate\u2069", "\\u2066isolate\\u2069"),
        ("nul\x00del\x7f c1\x9b", "nul\\x00del\\x7f c1\\x9b"),
        ("tab\tand\nnewline", "tab\tand\nnewline"),
    ],
)
def test_controls_and_bidirectional_characters_are_written_as_escapes(raw, shown):
    assert visible_controls(raw) == shown


B8_LOG = (
    "[rank0]: Traceback (most recent call last):\n"
    '[rank0]:   File "train.py", line 3, in <module>\n'
    f"[rank0]: ValueError: {EVIL_LINK} {EVIL_IMAGE} {EVIL_HTML}\n" + MARKER + "\n"
)


@pytest.mark.django_db
def test_the_markdown_of_a_report_carries_no_link_image_or_html_from_the_log(client):
    report, url = share(client, B8_LOG)
    markdown = client.get(url + ".md").content.decode()
    html = rendered(markdown)
    assert "ValueError" in markdown
    assert "evil.example" in html and not re.search(r"<a [^>]*evil|<img", html)


@pytest.mark.django_db
def test_copy_as_markdown_carries_no_link_from_the_log(client):
    page = client.post("/diagnose", {"log": B8_LOG}).content.decode()
    payload = re.search(r'name="payload" value="([^"]+)"', page).group(1)
    response = client.post("/d/", {"payload": payload})
    shared_page = client.get(response["Location"]).content.decode()
    textarea = html_module.unescape(re.search(r"<textarea[^>]*>(.*?)</textarea>", shared_page, re.S).group(1))
    assert "ValueError" in textarea and not re.search(r"<a [^>]*evil|<img", rendered(textarea))


@pytest.mark.django_db
def test_a_member_name_with_newlines_stays_inside_the_evidence_block(client):
    name = "rank0\n```\n# Injected heading\n[Click to fix](https:/evil.example/phish)\n```\n.log"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for member, data in ((name, sixty_four_rank_log().encode()), ("rank1.log", b"step 1\n")):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    upload = SimpleUploadedFile("job.tar.gz", buffer.getvalue(), content_type="application/gzip")
    page = client.post("/diagnose", {"file": upload}).content.decode()
    payload = re.search(r'name="payload" value="([^"]+)"', page).group(1)
    location = client.post("/d/", {"payload": payload})["Location"]
    assert Report.objects.filter(id=location.rsplit("/", 1)[1]).exists()
    markdown = client.get(location + ".md").content.decode()
    html = rendered(markdown)
    assert "Injected heading" in markdown, markdown
    assert "<h1>" not in html and "<a " not in re.sub(r'<a href="http://testserver[^"]*"', "", html).replace('<a href="/', "")


@pytest.mark.django_db
def test_escape_and_right_to_left_override_in_a_query_reach_the_page_as_visible_escapes(client):
    response = client.get("/search", {"q": "\x1b[31mnccl timeout \u202eoof"})
    page = response.content.decode()
    assert "\x1b" not in page and "\u202e" not in page
    assert "\\x1b[31mnccl timeout \\u202eoof" in page

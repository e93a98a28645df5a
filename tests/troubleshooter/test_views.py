"""Wizard pages through the Django test client, as plain pages and as htmx partials, served from the fixture tree
(tests/troubleshooter/trees/relay.yaml), so rewording a real tree breaks none of these. The real trees' pages are
checked in test_views_real_trees.py."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit

import html5lib
import pytest

from tests.troubleshooter.pages import HTMX, assert_valid_fragment, every_page_renders
from tests.kb.html_checks import assert_valid_html, element_ids
from kb.content.revision import content_revision

pytestmark = pytest.mark.django_db

RUN = {"phase": "running", "run-symptom": "slow", "launcher": "mpirun", "wait": "45"}
VALUE_STEP = {"phase": "running", "run-symptom": "slow", "launcher": "mpirun"}


def url(answers: dict[str, str]) -> str:
    return "/troubleshoot/relay/?" + urlencode(sorted(answers.items()))


def elements(content: bytes, tag: str | None = None) -> list:
    tree = html5lib.parse(content, namespaceHTMLElements=False)
    return [el for el in tree.iter() if tag is None or el.tag == tag]


@pytest.fixture(autouse=True)
def _content(loaded_content, relay_served):
    """Every page here serves the fixture tree; pages show case titles from the database."""


def test_the_index_offers_every_tree_and_its_starting_points(client):
    response = client.get("/troubleshoot/")
    assert response.status_code == 200
    assert_valid_html(response.content)
    hrefs = {a.get("href") for a in elements(response.content, "a")}
    assert "/troubleshoot/relay/" in hrefs
    for start in ("warmup", "running"):
        assert f"/troubleshoot/relay/?phase={start}" in hrefs


def test_the_first_step_is_a_full_page_with_a_live_region(client):
    response = client.get("/troubleshoot/relay/")
    assert response.status_code == 200
    assert_valid_html(response.content)
    region = next(el for el in elements(response.content, "div") if el.get("id") == "wizard-step")
    assert region.get("aria-live") == "polite"
    assert "step-focus" in element_ids(response.content)
    assert b"When does the relay stop?" in response.content


def test_an_htmx_request_gets_only_the_step_panel(client):
    response = client.get(url({"phase": "running"}), **HTMX)
    assert response.status_code == 200
    assert not response.content.lstrip().startswith(b"<!DOCTYPE")
    assert b"<html" not in response.content and b'id="wizard-step"' not in response.content
    assert response.content.lstrip().startswith(b'<div class="step"')
    assert_valid_fragment(response.content)
    assert b"What happens while running?" in response.content


def test_an_htmx_history_restore_gets_the_full_page(client):
    response = client.get(url({"phase": "running"}), HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    assert b"<html" in response.content


def test_full_and_partial_responses_vary_on_the_htmx_header(client):
    assert "HX-Request" in client.get(url({"phase": "running"}))["Vary"]


@pytest.mark.parametrize("answers", [{}, {"phase": "running"}, VALUE_STEP, RUN])
def test_every_htmx_element_is_also_a_plain_link_or_form(client, answers):
    for element in elements(client.get(url(answers)).content):
        if element.get("hx-get") is None:
            continue
        plain = element.get("href") if element.tag == "a" else element.get("action")
        assert plain == element.get("hx-get"), element.attrib
        assert element.get("hx-target") == "#wizard-step" and element.get("hx-swap") == "innerHTML"
        assert element.get("hx-push-url") == "true"


@pytest.mark.parametrize("answers", [{}, VALUE_STEP, RUN])
def test_pages_carry_no_inline_script_style_or_hx_on(client, answers):
    for partial in (False, True):
        content = client.get(url(answers), **(HTMX if partial else {})).content
        for element in elements(content) if not partial else []:
            assert element.get("style") is None
            if element.tag == "script":
                assert element.get("src") and not (element.text or "").strip()
        assert b" style=" not in content and b"hx-on" not in content and b"<script" not in content.split(b"</head>")[-1]


def test_links_carry_the_answers_sorted_so_equal_states_share_a_url(client):
    page = client.get(url({"phase": "running", "run-symptom": "slow"}))
    for a in elements(page.content, "a"):
        query = urlsplit(a.get("href") or "").query
        keys = [k for k, _ in parse_qsl(query)]
        assert keys == sorted(keys)


@pytest.mark.parametrize(
    "answers, kind, names",
    [
        (VALUE_STEP, "value-form", ["launcher", "phase", "run-symptom", "wait"]),
        (
            {"phase": "running", "run-symptom": "slow", "wait": "45"},
            "choice-form",
            ["launcher"] * 5 + ["phase", "run-symptom", "wait"],
        ),
    ],
)
def test_the_answer_form_sends_every_answer_in_sorted_order(client, answers, kind, names):
    """Submitted as it stands, the form's query is already canonical: no redirect after the answer."""
    page = client.get(url(answers))
    form = next(el for el in elements(page.content, "form") if kind in (el.get("class") or ""))
    assert [el.get("name") for el in form.iter() if el.tag == "input"] == names
    assert form.get("method") == "get" and form.get("action") == "/troubleshoot/relay/"


def test_every_earlier_answer_has_a_link_to_change_it(client):
    page = client.get(url(RUN))
    changes = [a for a in elements(page.content, "a") if "answer-change" in (a.get("class") or "")]
    assert len(changes) == len(RUN)
    changed = set()
    for link in changes:
        pairs = parse_qsl(urlsplit(link.get("href")).query)
        assert dict(p for p in pairs if p[0] != "_change") == RUN, "a change link keeps every answer"
        changed |= {v for k, v in pairs if k == "_change"}
    assert changed == set(RUN), "and names the one it changes"


def test_changing_an_earlier_answer_keeps_the_later_ones(client):
    page = client.get(url({**RUN, "_change": "launcher"}))
    assert "What starts the ranks?" in page.content.decode()
    form = next(el for el in elements(page.content, "form") if "choice-form" in (el.get("class") or ""))
    kept = {el.get("name"): el.get("value") for el in form.iter() if el.tag == "input" and el.get("type") == "hidden"}
    assert kept == {k: v for k, v in RUN.items() if k != "launcher"}
    leaf = client.get(url({**kept, "launcher": "torchrun"}))
    assert b"The running all-reduce times out" in leaf.content and b"<code>-x</code>" not in leaf.content


def test_every_step_has_a_restart_link(client):
    for answers in ({"phase": "running"}, RUN):
        assert "/troubleshoot/relay/" in {a.get("href") for a in elements(client.get(url(answers)).content, "a")}


def test_the_leaf_page_links_the_case_and_its_exact_fix_steps(client):
    page = client.get(url(RUN))
    assert page.status_code == 200
    hrefs = [a.get("href") for a in elements(page.content, "a")]
    assert "/kb/relay-running/" in hrefs and "/kb/relay-running/#fix-1" in hrefs
    assert not [h for h in hrefs if h and h.startswith("/kb/relay-running/#") and h != "/kb/relay-running/#fix-1"]


def test_the_leaf_page_shows_the_highlighted_script_a_copy_button_and_a_download(client):
    page = client.get(url(RUN))
    content = page.content.decode()
    assert '<div class="highlight"><pre tabindex="0">' in content
    assert "#!/usr/bin/env bash" in content
    button = next(el for el in elements(page.content, "button") if "copy-script" in (el.get("class") or ""))
    assert button.get("hidden") is not None, "without JavaScript the copy button stays hidden"
    download = next(a for a in elements(page.content, "a") if a.get("download") is not None)
    assert download.get("href") == "/troubleshoot/relay/fix.sh?" + urlencode(sorted(RUN.items()))


def test_the_leaf_page_says_whether_the_script_applies_settings(client):
    """Issue 11: a leaf whose script exports nothing must not claim to apply settings."""
    assert "<code>NCCL_DEBUG</code>" in client.get(url(RUN)).content.decode()
    warmup = {"phase": "warmup", "warm-symptom": "stall", "launcher": "torchrun", "wait": "45"}
    content = client.get(url(warmup)).content.decode()
    assert " exports " not in content and "sets no environment variable" in content


def test_the_download_is_the_script_shown_on_the_page(client):
    page = client.get(url(RUN)).content.decode()
    response = client.get("/troubleshoot/relay/fix.sh?" + urlencode(sorted(RUN.items())))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/x-shellscript"
    assert response["Content-Disposition"] == 'attachment; filename="fix.sh"'
    script = response.content.decode()
    assert script.startswith("#!/usr/bin/env bash\n")
    assert "# Case:      http://testserver/kb/relay-running/" in script
    assert "# Made by:   http://testserver/troubleshoot/relay/?" in script
    text_on_page = "".join(next(el for el in elements(page.encode(), "pre")).itertext())
    assert text_on_page == script


def test_the_script_header_names_the_content_revision(client, settings):
    script = client.get("/troubleshoot/relay/fix.sh?" + urlencode(sorted(RUN.items()))).content.decode()
    assert f"# Content revision: {content_revision(settings.CONTENT_DIR)}" in script


def test_every_question_and_every_leaf_renders_as_valid_html(client, relay_served):
    """One state per leaf, and every prefix of it: every question page and every diagnosis page."""
    tree = relay_served.trees["relay"]
    every_page_renders(client, tree)


@pytest.mark.parametrize(
    "query, message",
    [
        ("nosuch=1", "not a question in this troubleshooter"),
        ("phase=yesterday", "is not one of the answers"),
        ("phase=warmup&phase=running", "is answered 2 times"),
        ("leaf-run=1", "a diagnosis, not a question"),
        ("wait=45%3Bid", "That is not valid here"),
    ],
)
def test_a_tampered_state_is_a_400_with_a_message(client, query, message):
    for partial in (False, True):
        response = client.get(f"/troubleshoot/relay/?{query}", **(HTMX if partial else {}))
        assert response.status_code == 400
        assert message in response.content.decode()
        (assert_valid_fragment if partial else assert_valid_html)(response.content)


def test_a_bad_free_value_asks_the_question_again_with_the_value_marked(client):
    response = client.get(url({**RUN, "wait": "45 50"}))
    assert response.status_code == 400
    field = next(el for el in elements(response.content, "input") if el.get("name") == "wait")
    assert field.get("aria-invalid") == "true" and field.get("value") == "45 50"


def test_an_unknown_tree_is_a_404(client):
    assert client.get("/troubleshoot/no-such-tree/").status_code == 404
    assert client.get("/troubleshoot/no-such-tree/fix.sh").status_code == 404


def test_a_script_for_an_unfinished_state_is_a_400_naming_the_next_question(client):
    response = client.get("/troubleshoot/relay/fix.sh?phase=running")
    assert response.status_code == 400
    assert b"What happens while running?" in response.content


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["plain", "htmx"])
def test_a_state_with_an_answer_off_the_path_redirects_to_its_canonical_url(client, headers):
    """A submitted form carries every answer; one for a branch the new answer left behind must not stay in the URL."""
    response = client.get(url({**RUN, "phase": "warmup"}), **headers)
    assert response.status_code == 302
    assert response["Location"] == url({"phase": "warmup", "launcher": "mpirun", "wait": "45"})
    assert client.get(response["Location"], **headers).status_code == 200


def test_a_canonical_state_is_served_without_a_redirect(client):
    assert client.get(url({**RUN, "_log": "phase"})).status_code == 200


def test_a_value_question_page_shows_its_help_once(client):
    page = client.get(url(VALUE_STEP))
    section = next(el for el in elements(page.content, "section") if el.get("class") == "question")
    helps = ["".join(el.itertext()) for el in section.iter() if "help" in (el.get("class") or "").split()]
    assert len(helps) == 1 and helps[0].count("slowest step") == 1 and helps[0].count("45") == 1

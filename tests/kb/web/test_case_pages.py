"""Case pages: every case renders as valid HTML with every stable anchor, and old links keep working."""

import re

import pytest
from django.conf import settings
from django.core.cache import caches
from django.core.management import call_command
from django.utils.html import escape

from diagnosis.versions import versions_text

from kb.content.cases import case_files_read
from kb.content.schema import REQUIRED_SECTIONS
from kb.models import Alias, Case
from tests.kb.case_files import write_case
from tests.kb.html_checks import assert_valid_html, element_ids, main_links

pytestmark = pytest.mark.django_db

ALL_SLUGS = sorted(doc.slug for doc in case_files_read(settings.CONTENT_DIR)[0])
CORE = [
    "megatron-fused-kernel-compile-hang",
    "llama3-fsdp-allgather-timeout",
    "autotrain-creating-trainer-broadcast-timeout",
    "transformer-engine-mpi-tp-overlap-hang",
]


def test_the_four_core_cases_exist():
    assert set(CORE) <= set(Case.objects.values_list("slug", flat=True))


@pytest.mark.parametrize("slug", ALL_SLUGS)
def test_case_page_is_valid_html(client, slug):
    response = client.get(f"/kb/{slug}/")
    assert response.status_code == 200
    assert_valid_html(response.content)


@pytest.mark.parametrize("slug", ALL_SLUGS)
def test_case_page_has_every_stable_anchor(client, slug):
    ids = element_ids(client.get(f"/kb/{slug}/").content)
    for anchor in (*REQUIRED_SECTIONS, "fix-1", "references"):
        assert anchor in ids, f"#{anchor} missing on {slug}"


@pytest.mark.parametrize("slug", ALL_SLUGS)
def test_every_heading_anchor_has_a_visible_permalink(client, slug):
    page = client.get(f"/kb/{slug}/").content.decode()
    for anchor in (*REQUIRED_SECTIONS, "references"):
        assert f'href="#{anchor}"' in page


def test_case_page_shows_applies_to_and_last_reviewed(client):
    case = Case.objects.get(slug=CORE[0])
    page = client.get(f"/kb/{case.slug}/").content.decode()
    assert case.applies_to[0]["software"] in page
    assert f'datetime="{case.last_reviewed.isoformat()}"' in page


def test_case_page_carries_title_description_and_opengraph(client):
    case = Case.objects.get(slug=CORE[1])
    page = client.get(f"/kb/{case.slug}/").content.decode()
    assert '<meta property="og:title"' in page and '<meta name="description"' in page
    assert '<meta property="og:type" content="article">' in page


def test_related_cases_are_linked_both_ways(client):
    case = Case.objects.exclude(related=[]).first()
    other = case.related[0]
    assert f'href="/kb/{other}/"' in client.get(f"/kb/{case.slug}/").content.decode()
    assert f'href="/kb/{case.slug}/"' in client.get(f"/kb/{other}/").content.decode()


def test_a_case_page_not_kept_yet_is_rendered_with_at_most_five_statements(client, django_assert_max_num_queries):
    """A page is rendered anew whenever its counts change: the counts with the served revision, the case, its tags,
    every case's title and links in one read (related, linked from, the vote form's list), and the revision again
    before the page is kept (kb/page_cache.py)."""
    case = Case.objects.exclude(related=[]).first()
    caches["pages"].clear()
    with django_assert_max_num_queries(5):
        page = client.get(f"/kb/{case.slug}/").content.decode()
    assert f'href="/kb/{case.related[0]}/"' in page


def test_a_case_pages_vote_form_offers_every_case_but_the_triage_guides_by_title(client):
    page = client.get(f"/kb/{CORE[0]}/").content.decode()
    select = re.search(r'<select id="vote-other-case" name="other_case">(.*?)</select>', page, re.S).group(1)
    offered = re.findall(r'<option value="([a-z0-9-]+)">', select)
    assert offered == list(Case.objects.filter(guide=False).order_by("title").values_list("slug", flat=True))


@pytest.fixture
def content_with_an_alias(tmp_path, settings):
    """A content/ of its own, so the redirect is tested whether or not the real cases declare aliases:
    tests/kb/case_files.py gives first-case the alias first-case-old."""
    settings.CONTENT_DIR = tmp_path / "content"
    settings.SEARCH_INDEX_DIR = tmp_path / "index"
    write_case(settings.CONTENT_DIR, "first-case")
    call_command("load_content", verbosity=0)
    assert Alias.objects.get(slug="first-case-old").case.slug == "first-case"


def test_alias_answers_301_to_the_canonical_url(client, content_with_an_alias):
    response = client.get("/kb/first-case-old/")
    assert response.status_code == 301
    assert response["Location"] == "/kb/first-case/"


def test_unknown_slug_answers_a_helpful_404(client):
    response = client.get("/kb/nccl-allgather-fsdp-timeout-typo/")
    assert response.status_code == 404
    assert "No case is called" in response.content.decode()
    assert ("/kb/", "All cases") in main_links(response.content)  # the page's own way on, not the header's
    assert_valid_html(response.content)


def test_case_list_filters_by_tag(client):
    response = client.get("/kb/?tag=framework:megatron-lm")
    page = response.content.decode()
    assert response.status_code == 200
    assert "/kb/megatron-fused-kernel-compile-hang/" in page
    assert "/kb/docker-shm-too-small/" not in page


def test_case_list_refuses_a_malformed_tag_with_400(client):
    response = client.get("/kb/?tag=<script>")
    assert response.status_code == 400
    assert b"&lt;script&gt;" in response.content


def test_case_json_gives_the_structured_content(client):
    data = client.get(f"/api/cases/{CORE[2]}.json").json()
    assert data["slug"] == CORE[2]
    assert data["fix_steps"][0]["id"] == "fix-1"
    assert {"signatures", "references", "applies_to", "tags", "sections"} <= set(data)


def test_case_json_for_unknown_slug_is_404_json(client):
    response = client.get("/api/cases/nope.json")
    assert response.status_code == 404 and response.json()["error"]


def test_home_lists_the_cases_and_offers_the_paste_box(client):
    page = client.get("/").content.decode()
    assert '<textarea id="log" name="log"' in page and '<label for="log">' in page
    for slug in CORE:
        assert f"/kb/{slug}/" in page


def test_admin_is_read_only_and_says_content_lives_in_git(admin_client):
    page = admin_client.get("/admin/kb/case/").content.decode()
    assert "edited in git" in page
    assert admin_client.get("/admin/kb/case/add/").status_code == 403


def test_pages_send_a_csp_without_inline_script(client):
    policy = client.get("/").headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy


# --- Issue 12: a short path through each page -------------------------------------------------------------


def test_toc_nests_causes_and_fix_steps_under_their_section(client):
    page = client.get("/kb/llama3-fsdp-allgather-timeout/").content.decode()
    toc = page[page.index('<nav class="toc"') : page.index("</nav>", page.index('<nav class="toc"'))]
    fix = toc[toc.index('href="#fix"') :]
    assert fix.index("<ol>") < fix.index('href="#fix-1"') < fix.index('href="#fix-8"') < fix.index('href="#prevention"')
    assert 'href="#cause-1"' in toc and 'href="#references"' in toc


def test_do_this_first_comes_before_the_table_of_contents_and_the_metadata(client):
    page = client.get("/kb/llama3-fsdp-allgather-timeout/").content.decode()
    assert page.index('class="do-first"') < page.index('<nav class="toc"') < page.index('class="case-meta"')


def test_every_permalink_has_an_accessible_name(client):
    page = client.get("/kb/llama3-fsdp-allgather-timeout/").content.decode()
    links = re.findall(r'<a class="headerlink"[^>]*>(.*?)</a>', page)
    assert len(links) >= 20
    for inner in links:
        assert '<span aria-hidden="true">#</span>' in inner and "Link to this section: " in inner
    assert "Link to this section: 2. See where each rank is while it hangs" in page


@pytest.mark.parametrize("slug", ALL_SLUGS)
def test_the_case_page_prints_the_stored_body_byte_for_byte(client, slug):
    """The body is built once, at load (kb/content/rendering.py): no view rewrites it on its way to the page."""
    page = client.get(f"/kb/{slug}/").content.decode()
    start = page.index('<div class="case-body">') + len('<div class="case-body">')
    served = page[start : page.index('<h2 id="references">', start)]
    assert served == f"\n    {Case.objects.get(slug=slug).body_html}\n    "


def test_a_fix_step_heading_shows_the_releases_its_step_holds_for(client):
    cases = [case for case in Case.objects.all() if any(step.get("versions") for step in case.steps)]
    assert cases
    for case in cases:
        page = client.get(f"/kb/{case.slug}/").content.decode()
        for step in case.steps:
            heading = re.search(rf'<h3 id="{step["anchor"]}">(.*?)</h3>', page).group(1)
            if step.get("versions"):
                badge = f'<span class="step-versions">{escape(versions_text(step["versions"]))} only</span>'
                assert heading.index(badge) < heading.index('<a class="headerlink"')
            else:
                assert "step-versions" not in heading


def test_edit_link_appears_only_when_the_content_repository_is_set(client, settings):
    assert "Edit this case" not in client.get("/kb/llama3-fsdp-allgather-timeout/").content.decode()
    settings.KB_CONTENT_EDIT_URL = "https://git.example.com/ml/hang-doctor/-/edit/main/content/"
    page = client.get("/kb/llama3-fsdp-allgather-timeout/").content.decode()
    assert 'href="https://git.example.com/ml/hang-doctor/-/edit/main/content/cases/llama3-fsdp-allgather-timeout.md"' in page


def test_the_site_404_page_answers_with_debug_on(client, settings):
    settings.DEBUG = True
    for path in ("/kb/no-such-case/", "/no/such/page", "/kb/harmles/"):
        response = client.get(path)
        assert response.status_code == 404
        page = response.content.decode()
        assert "Page not found" in page and "URLconf" not in page and "technical" not in page.lower()
    assert client.get("/kb").status_code == 301 and client.get("/kb")["Location"] == "/kb/"
    assert client.get("/search/").status_code == 404


def test_favicon_is_linked_and_served(client):
    page = client.get("/").content.decode()
    assert re.search(r'<link rel="icon" href="/static/favicon\.svg" type="image/svg\+xml">', page)
    assert client.get("/favicon.ico")["Location"] == "/static/favicon.svg"


def test_command_line_panel_on_home_and_on_the_413_page(client, settings):
    home = client.get("/").content.decode()
    assert "From the command line" in home
    assert "curl --data-binary @job.log http://testserver/api/diagnose" in home
    assert "manage.py diagnose job-logs/" in home and "grep -m1 -B300 -A100 -E" in home
    settings.KB_MAX_LOG_BYTES = 1000
    response = client.post("/diagnose", {"log": "x" * 5000})
    assert response.status_code == 413 and "From the command line" in response.content.decode()
    assert_valid_html(response.content)

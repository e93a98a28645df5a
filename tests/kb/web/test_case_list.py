"""The case list (issue 12): real tags only, clean filter URLs, the triage guide first, headings in order."""

import re

import pytest

from kb.content.schema import TAG_VALUES
from kb.forms import TagFilterForm
from kb.models import Case, Tag
from tests.kb.html_checks import assert_valid_html

pytestmark = pytest.mark.django_db


def test_any_is_not_a_tag():
    assert all("any" not in values for values in TAG_VALUES.values())
    assert not Tag.objects.filter(value="any").exists()


def test_an_unset_filter_is_redirected_to_a_clean_url(client):
    response = client.get("/kb/?tag=&tag=&tag=phase:checkpoint")
    assert response.status_code == 302 and response["Location"] == "/kb/?tag=phase:checkpoint"
    assert client.get("/kb/?tag=").headers["Location"] == "/kb/"
    assert client.get("/kb/?tag=phase:init&tag=phase:init").headers["Location"] == "/kb/?tag=phase:init"


def test_filter_links_carry_no_empty_tag(client):
    for path in ("/kb/", "/kb/?tag=phase:checkpoint", "/kb/llama3-fsdp-allgather-timeout/"):
        page = client.get(path).content.decode()
        assert "tag=&" not in page and not re.search(r"tag=(?:&|\"|$)", page)


def test_a_well_formed_but_unknown_tag_is_refused_with_its_name(client):
    response = client.get("/kb/?tag=phase:teatime")
    assert response.status_code == 400 and b"phase:teatime" in response.content and b"is not a tag" in response.content


def test_tags_combine_with_and(client):
    both = client.get("/kb/?tag=framework:megatron-lm&tag=phase:compile").content.decode()
    assert "/kb/megatron-fused-kernel-compile-hang/" in both
    assert "/kb/llama3-fsdp-allgather-timeout/" not in both
    assert "remove the tag phase:compile" in both


def test_the_tag_form_is_shared_and_drops_empty_values():
    from django.http import QueryDict

    form = TagFilterForm(QueryDict("tag=&tag=phase:init&tag=framework:deepspeed"))
    assert form.is_valid() and form.pairs() == [("phase", "init"), ("framework", "deepspeed")]
    assert not TagFilterForm(QueryDict("tag=<script>")).is_valid()


def test_the_triage_guide_comes_first(client):
    guides = list(Case.objects.filter(guide=True).values_list("slug", flat=True))
    assert "nccl-watchdog-timeout-triage" in guides
    for path in ("/kb/", "/"):
        page = client.get(path).content.decode()
        listed = re.findall(r'<li class="case-card[^"]*">\s*<h3>(?:<span[^>]*>[^<]*</span> )?<a href="/kb/([a-z0-9-]+)/"', page)
        assert listed[0] == "nccl-watchdog-timeout-triage", listed[:3]


def test_headings_do_not_skip_a_level(client):
    for path in (
        "/kb/",
        "/kb/?tag=phase:checkpoint",
        "/",
        "/search?q=NCCL_SOCKET_IFNAME",
        "/search?q=zzqxv",
        "/kb/llama3-fsdp-allgather-timeout/",
        "/kb/no-such-case/",
    ):
        response = client.get(path)
        assert_valid_html(response.content)
        levels = [int(n) for n in re.findall(r"<h([1-6])[ >]", response.content.decode())]
        assert levels[0] == 1, path
        for before, after in zip(levels, levels[1:]):
            assert after <= before + 1, f"{path}: h{before} then h{after}"

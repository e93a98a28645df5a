"""Loading content: all or nothing, upsert by slug, vanished cases removed, drift reported by a system check."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from kb.checks import content_drift_check
from kb.models import Alias, Case, ContentState
from tests.kb.case_files import case_text, line_of, write_case

pytestmark = pytest.mark.django_db


@pytest.fixture
def content(tmp_path, settings):
    settings.CONTENT_DIR = tmp_path / "content"
    settings.SEARCH_INDEX_DIR = tmp_path / "index"
    write_case(settings.CONTENT_DIR, "first-case")
    write_case(settings.CONTENT_DIR, "second-case")
    call_command("load_content", verbosity=0)
    return settings.CONTENT_DIR


def snapshot():
    return sorted(Case.objects.values_list("slug", "title", "body_html")), sorted(Alias.objects.values_list("slug", flat=True))


def test_load_creates_cases_and_aliases(content):
    assert sorted(Case.objects.values_list("slug", flat=True)) == ["first-case", "second-case"]
    assert Alias.objects.get(slug="first-case-old").case.slug == "first-case"


def test_reload_updates_in_place_and_removes_vanished_cases(content):
    first_id = Case.objects.get(slug="first-case").id
    text = case_text("first-case").replace('title: "Test case first-case"', 'title: "Renamed"')
    write_case(content, "first-case", text)
    (content / "cases" / "second-case.md").unlink()
    call_command("load_content", verbosity=0)
    assert list(Case.objects.values_list("id", "slug", "title")) == [(first_id, "first-case", "Renamed")]


def test_broken_file_leaves_database_and_index_exactly_as_they_were(content, settings):
    before = snapshot()
    index_target = (settings.SEARCH_INDEX_DIR / "current").resolve()
    write_case(content, "third-case", case_text("third-case").replace("weight: 6", "weight: lots"))
    write_case(content, "first-case", case_text("first-case").replace('title: "Test case first-case"', 'title: "Changed"'))
    with pytest.raises(CommandError, match="1 content problem"):
        call_command("load_content", verbosity=0)
    assert snapshot() == before
    assert (settings.SEARCH_INDEX_DIR / "current").resolve() == index_target


def test_load_error_names_file_and_line(content, capsys):
    text = case_text("third-case").replace("weight: 6", "weight: lots")
    write_case(content, "third-case", text)
    with pytest.raises(CommandError):
        call_command("load_content", verbosity=0)
    assert f"content/cases/third-case.md:{line_of(text, 'weight:')}: 'weight' must be a number" in capsys.readouterr().err


def test_system_check_warns_when_content_changed_since_load(content):
    assert content_drift_check(None) == []
    write_case(content, "third-case")
    warnings = content_drift_check(None)
    assert [w.id for w in warnings] == ["kb.W002"]


def test_system_check_warns_when_nothing_was_loaded(content):
    ContentState.objects.all().delete()
    assert [w.id for w in content_drift_check(None)] == ["kb.W001"]


def test_index_is_swapped_not_rewritten_and_the_previous_build_is_kept(content, settings):
    first_build = (settings.SEARCH_INDEX_DIR / "current").resolve()
    write_case(content, "third-case")
    call_command("load_content", verbosity=0)
    second_build = (settings.SEARCH_INDEX_DIR / "current").resolve()
    write_case(content, "fourth-case")
    call_command("load_content", verbosity=0)
    third_build = (settings.SEARCH_INDEX_DIR / "current").resolve()
    assert len({first_build, second_build, third_build}) == 3
    assert second_build.exists() and not first_build.exists()


def test_a_revision_already_loaded_and_published_is_not_loaded_again(content, settings, capsys):
    build = (settings.SEARCH_INDEX_DIR / "current").resolve()
    call_command("load_content")
    assert "already loaded" in capsys.readouterr().out
    assert (settings.SEARCH_INDEX_DIR / "current").resolve() == build


def test_force_loads_the_same_revision_again(content, settings):
    build = (settings.SEARCH_INDEX_DIR / "current").resolve()
    call_command("load_content", "--force", verbosity=0)
    assert (settings.SEARCH_INDEX_DIR / "current").resolve() != build


def test_a_failed_database_write_publishes_nothing_and_leaves_no_build(content, settings, monkeypatch):
    """Regression (robustness probe): the index was swapped before the database committed."""
    import kb.content.load as load

    build = (settings.SEARCH_INDEX_DIR / "current").resolve()
    before = snapshot()

    def fail(docs):
        raise RuntimeError("database is locked")

    monkeypatch.setattr(load, "_write_harmless", fail)
    write_case(content, "third-case")
    with pytest.raises(RuntimeError):
        call_command("load_content", verbosity=0)
    assert (settings.SEARCH_INDEX_DIR / "current").resolve() == build
    assert [p.name for p in settings.SEARCH_INDEX_DIR.glob("build-*")] == [build.name]
    assert snapshot() == before


def test_orphan_builds_of_an_interrupted_load_are_removed_by_the_next_load(content, settings):
    orphan = settings.SEARCH_INDEX_DIR / "build-0123456789ab-1"
    orphan.mkdir()
    write_case(content, "third-case")
    call_command("load_content", verbosity=0)
    assert not orphan.exists()


def test_the_command_line_warns_on_stderr_when_content_changed_since_load(content, tmp_path):
    """diagnose skips Django's full system checks for its start-up, but not this one."""
    write_case(content, "third-case")
    log = tmp_path / "job.log"
    log.write_text("nothing to see\n")
    err = io.StringIO()
    call_command("diagnose", str(log), stdout=io.StringIO(), stderr=err)
    assert "content/ is at" in err.getvalue() and "load_content" in err.getvalue()

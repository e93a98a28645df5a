"""The command line answers from the rules snapshot that load_content publishes, without starting Django, and
gives exactly what the Django command gives from the database."""

import functools
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from kb.cli import fast_main
from kb.content.publish import current_build
from kb.content.rules_snapshot import RULES_FILE
from tools.corpus import corpus_entries
from kb.models import ContentState
from tests.kb.case_files import write_case

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[3]
ENTRIES = corpus_entries(REPO / "tests" / "fixtures" / "logs")


def _fast(*argv: str, content_dir: Path | None = None) -> tuple[int | None, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = fast_main(
        list(argv),
        content_dir=content_dir or settings.CONTENT_DIR,
        index_dir=settings.SEARCH_INDEX_DIR,
        stdout=out,
        stderr=err,
    )
    return code, out.getvalue(), err.getvalue()


def _without_timing(result: dict) -> dict:
    result["stats"].pop("ms")
    return result


def test_every_fixture_gets_the_same_json_from_the_snapshot_as_from_the_database(monkeypatch):
    """Every fixture through the command line's whole path and through Django's. The snapshot is read, and content/
    hashed for the drift warning, at the first start and kept for the others: each start would read the same
    unchanged files (the tests below check the reading, test_content_changed_since_the_load_is_warned_about the
    warning), and doing it again for each of the 274 fixtures was most of this test's time."""
    from kb import checks, cli

    monkeypatch.setattr(cli, "rules_snapshot_read", functools.cache(cli.rules_snapshot_read))
    revision = functools.cache(cli.content_revision)
    monkeypatch.setattr(cli, "content_revision", revision)
    monkeypatch.setattr(checks, "content_revision", revision)
    for entry in ENTRIES:
        code, out, _ = _fast(str(entry.path), "--json")
        django_out = io.StringIO()
        call_command("diagnose", str(entry.path), "--json", stdout=django_out)
        assert code == 0
        assert _without_timing(json.loads(out)) == _without_timing(json.loads(django_out.getvalue())), entry.id


def test_the_snapshot_is_published_with_the_revision_the_database_holds():
    body = json.loads((current_build(settings.SEARCH_INDEX_DIR) / RULES_FILE).read_text())
    assert body["revision"] == ContentState.loaded_revision()
    assert body["case_urls"]["llama3-fsdp-allgather-timeout"] == "/kb/llama3-fsdp-allgather-timeout/"


def test_without_a_published_snapshot_the_command_is_left_to_django(tmp_path):
    code = fast_main(["x.log"], content_dir=settings.CONTENT_DIR, index_dir=tmp_path / "no-index")
    assert code is None


@pytest.mark.parametrize("option", ["--help", "--settings=config.settings", "-v", "--traceback"])
def test_help_and_djangos_own_options_are_left_to_django(option):
    assert fast_main(["x.log", option], content_dir=settings.CONTENT_DIR, index_dir=settings.SEARCH_INDEX_DIR) is None


def test_a_missing_file_is_refused_in_one_line_with_exit_status_1(tmp_path):
    code, out, err = _fast(str(tmp_path / "nope.log"))
    assert (code, out) == (1, "")
    assert err == f"CommandError: no such file or directory: {tmp_path / 'nope.log'}\n"


def test_content_changed_since_the_load_is_warned_about(tmp_path):
    import shutil

    content = tmp_path / "content"
    shutil.copytree(settings.CONTENT_DIR, content)
    write_case(content, "third-case")
    log = tmp_path / "job.log"
    log.write_text("nothing to see\n")
    code, _, err = _fast(str(log), content_dir=content)
    assert code == 0 and "content/ is at" in err and "load_content" in err


def test_manage_py_answers_without_importing_django(tmp_path):
    """The start-up path proper, as a user runs it: `-X importtime` lists every module the process imported
    (it survives the restart that asks for huge pages), and none is Django's."""
    log = tmp_path / "job.log"
    log.write_text((REPO / "tests" / "fixtures" / "logs" / "fsdp_rank2_behind_torch25.log").read_text(errors="replace"))
    env = {"KB_INDEX_DIR": str(settings.SEARCH_INDEX_DIR), "KB_CONTENT_DIR": str(settings.CONTENT_DIR), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "manage.py", "diagnose", str(log), "--json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert json.loads(result.stdout)["matches"][0]["slug"] == "llama3-fsdp-allgather-timeout"
    imported = [line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")]
    assert "kb.cli" in imported and not [name for name in imported if name.split(".")[0] == "django"]


def test_a_build_published_before_the_snapshot_existed_is_built_again(settings, tmp_path):
    """The session's published build, copied (its links kept) rather than loaded again, less its snapshot."""
    import shutil

    shutil.copytree(settings.SEARCH_INDEX_DIR, tmp_path / "index", symlinks=True)
    settings.SEARCH_INDEX_DIR = tmp_path / "index"
    (current_build(settings.SEARCH_INDEX_DIR) / RULES_FILE).unlink()
    call_command("load_content", verbosity=0)
    assert (current_build(settings.SEARCH_INDEX_DIR) / RULES_FILE).is_file()


def test_the_build_holds_the_compiled_literal_pass_and_a_start_uses_it_instead_of_compiling(monkeypatch):
    from kb.content.rules_snapshot import LITERALS_FILE, rules_snapshot_read
    from diagnosis.scan import literals as scan_literals
    from diagnosis.scan import presence as scan_presence

    assert (current_build(settings.SEARCH_INDEX_DIR) / LITERALS_FILE).is_file()
    scan_literals._LOADED.clear()
    monkeypatch.setattr(scan_literals, "_literal_database_compile", lambda *args: pytest.fail("compiled at start-up"))
    rules = rules_snapshot_read(settings.SEARCH_INDEX_DIR).rules
    line = "[rank3]:[E ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout\n"
    found = scan_presence.literals_present(line, rules.literals)
    assert ("Watchdog caught collective operation timeout", False) in found.first_end


def test_a_literal_pass_compiled_from_other_literals_is_not_used():
    from diagnosis.scan import literals as scan_literals

    dumped = scan_literals.literal_database_dump([("Watchdog caught", False), ("NCCL WARN", False)])
    assert not scan_literals.literal_database_load([("Watchdog caught", False)], dumped)
    assert scan_literals.literal_database_load([("NCCL WARN", False), ("Watchdog caught", False)], dumped)


def test_a_build_published_without_the_literal_pass_gets_it_at_the_first_start():
    """A build published by an older release: the first start compiles and leaves it; the next loads it."""
    from kb.content.rules_snapshot import LITERALS_FILE, rules_snapshot_read
    from diagnosis.scan import literals as scan_literals

    stored = current_build(settings.SEARCH_INDEX_DIR) / LITERALS_FILE
    stored.unlink()
    rules = rules_snapshot_read(settings.SEARCH_INDEX_DIR).rules
    assert scan_literals.literal_database_load(rules.literals, stored.read_bytes())
    assert [p.name for p in stored.parent.iterdir() if p.name.startswith(LITERALS_FILE)] == [LITERALS_FILE]


def test_a_start_takes_the_literal_groups_of_the_rules_patterns_from_the_build_instead_of_deriving_them(monkeypatch):
    from kb.content.rules_snapshot import GROUPS_FILE, rules_snapshot_read
    from diagnosis.scan import literals as scan_literals

    assert (current_build(settings.SEARCH_INDEX_DIR) / GROUPS_FILE).is_file()
    before = dict(scan_literals._GROUPS)
    scan_literals._GROUPS.clear()
    monkeypatch.setattr(scan_literals, "_literal_groups_derive", lambda pattern, ignorecase: pytest.fail(f"derived {pattern!r}"))
    rules = rules_snapshot_read(settings.SEARCH_INDEX_DIR).rules
    assert all(sig.guards == before[(sig.pattern, sig.ignorecase)] for sig in rules.signatures)


def test_literal_groups_derived_by_other_code_are_not_taken():
    """Another release of the deriver (or of Python's regex parser) may derive other groups from the same pattern."""
    from diagnosis.scan import literals as scan_literals

    dumped = json.loads(scan_literals.literal_groups_dump())
    assert scan_literals.literal_groups_load(json.dumps(dumped).encode())
    dumped["deriver"] = "0" * 64
    assert not scan_literals.literal_groups_load(json.dumps(dumped).encode())
    assert not scan_literals.literal_groups_load(b"not json")


def test_a_build_published_without_the_literal_groups_gets_them_at_the_first_start():
    from kb.content.rules_snapshot import GROUPS_FILE, rules_snapshot_read
    from diagnosis.scan import literals as scan_literals

    stored = current_build(settings.SEARCH_INDEX_DIR) / GROUPS_FILE
    stored.unlink()
    rules_snapshot_read(settings.SEARCH_INDEX_DIR)
    assert scan_literals.literal_groups_load(stored.read_bytes())
    assert [p.name for p in stored.parent.iterdir() if p.name.startswith(GROUPS_FILE)] == [GROUPS_FILE]


@pytest.mark.parametrize(
    "cores, available_gib, workers",
    [(16, 128, 16), (16, 4, 6), (16, 0.5, 1), (2, 24, 2)],
)
def test_a_large_log_gets_a_worker_a_core_within_a_quarter_of_the_memory_left(cores, available_gib, workers, monkeypatch):
    """16 cores reading a 600 MB log held about 2 GB in all; a shared login node with little memory left gets fewer."""
    from kb import cli

    monkeypatch.setattr(cli.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(cli, "memory_available_bytes", lambda: int(available_gib * 1024**3))
    assert cli.workers_allowed() == workers


def test_where_the_memory_left_cannot_be_read_a_large_log_gets_a_worker_a_core(monkeypatch):
    from kb import cli

    def unreadable() -> int:
        raise FileNotFoundError("/proc/meminfo")  # macOS has no /proc

    monkeypatch.setattr(cli.os, "cpu_count", lambda: 8)
    monkeypatch.setattr(cli, "memory_available_bytes", unreadable)
    assert cli.workers_allowed() == 8


def test_without_a_database_or_a_snapshot_the_command_says_what_to_run_not_a_traceback(tmp_path):
    """A fresh checkout before `make content`: no snapshot to answer from, and Django finds no database."""
    log = tmp_path / "rank0.log"
    log.write_text((REPO / "tests" / "fixtures" / "logs" / "fsdp_rank2_behind_torch25.log").read_text(errors="replace"))
    env = {
        "PATH": "/usr/bin:/bin",
        "SQLITE_PATH": str(tmp_path / "no-such-folder" / "db.sqlite3"),
        "KB_INDEX_DIR": str(tmp_path / "no-index"),
    }
    done = subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "diagnose", str(log)], capture_output=True, text=True, env=env, cwd=REPO
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("CommandError: no content is loaded here") and "Run: make content" in done.stderr

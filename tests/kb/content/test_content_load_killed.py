"""`load_content` killed at any point (issue 14, item 5): what the site serves stays one revision, and the next
load leaves no build behind but the one it serves and the one that one replaced.

A deploy script killed by its CI runner's timeout, a host rebooted, an operator's Ctrl-\\: SIGKILL runs no
clean-up, so each test kills a real `load_content` process at one step of the load (by making that step kill its
own process), then asks the site's own read paths what they serve, runs `load_content` again as `make serve` does
at every start, and asks again. The site starts at revision A (two cases) and the killed load was loading either
revision B (a third case) or A again with --force.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings

from tests.kb.case_files import write_case

pytestmark = pytest.mark.slow  # over a few seconds in all: make test runs it, make check does not

ROOT = Path(settings.BASE_DIR)

SCRIPT = textwrap.dedent("""
    import importlib, io, json, os, signal, sys
    import django
    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    def served():
        from kb.models import Case, ContentState
        from kb.search.index import search_results
        hits = search_results("barrier", index_dir=settings.SEARCH_INDEX_DIR, limit=50).hits
        return {
            "revision": ContentState.loaded_revision(),
            "cases": sorted(Case.objects.values_list("slug", flat=True)),
            "found": sorted(hit.slug for hit in hits),
        }

    if sys.argv[1] == "kill":
        module, name = sys.argv[2].rsplit(".", 1)

        def killed(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)

        setattr(importlib.import_module(module), name, killed)
        call_command("load_content", *sys.argv[3:], verbosity=0)
    else:
        print(json.dumps(served()))
        call_command("load_content", stdout=io.StringIO())
        print(json.dumps(served()))
""")


@dataclass(frozen=True)
class Site:
    folder: Path
    environment: dict[str, str]
    first_build: str  # what `current` pointed at after the first load

    @property
    def index(self) -> Path:
        return self.folder / "index"

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", SCRIPT, *args], cwd=ROOT, env=self.environment, capture_output=True, text=True, timeout=120
        )


@pytest.fixture(scope="module")
def loaded_site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    """A database and an index at revision A, made once and copied for each test."""
    folder = tmp_path_factory.mktemp("site")
    write_case(folder / "content", "first-case")
    write_case(folder / "content", "second-case")
    environment = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE")}
    environment.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        SQLITE_PATH=str(folder / "db.sqlite3"),
        KB_INDEX_DIR=str(folder / "index"),
        KB_CONTENT_DIR=str(folder / "content"),
    )
    for command in (["migrate", "--noinput"], ["load_content"]):
        done = subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=environment, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    return Site(folder, environment, (folder / "index" / "current").resolve().name)


@pytest.fixture
def site(loaded_site: Site, tmp_path: Path) -> Site:
    folder = tmp_path / "site"
    shutil.copytree(loaded_site.folder, folder, symlinks=True)
    environment = {
        **loaded_site.environment,
        "SQLITE_PATH": str(folder / "db.sqlite3"),
        "KB_INDEX_DIR": str(folder / "index"),
        "KB_CONTENT_DIR": str(folder / "content"),
    }
    return Site(folder, environment, loaded_site.first_build)


REVISION_A = ["first-case", "second-case"]
REVISION_B = ["first-case", "second-case", "third-case"]
STEPS = [
    # (the step that kills its process, what the killed load was loading)
    ("kb.content.load.index_write", "B"),  # a build folder made, the index not written
    ("kb.content.load.snapshot_write", "B"),  # the index written, not the troubleshooter's snapshot
    ("kb.content.load._write_harmless", "B"),  # case rows written in the transaction, not committed
    ("kb.content.load.rules_snapshot_write", "B"),  # every row written, not committed
    ("kb.content.load.build_swap", "B"),  # committed, not swapped in
    ("kb.content.publish.builds_prune", "B"),  # swapped in, older builds not removed
    ("kb.content.load.index_write", "A --force"),
    ("kb.content.load.build_swap", "A --force"),
]


@pytest.mark.parametrize("step, loading", STEPS, ids=[f"{step.rsplit('.', 1)[1]}-{loading}" for step, loading in STEPS])
def test_a_load_killed_at_any_step_leaves_one_revision_served_and_the_next_load_leaves_no_stray_build(
    site: Site, step: str, loading: str
) -> None:
    force = loading.endswith("--force")
    if not force:
        write_case(site.folder / "content", "third-case")
    killed = site.run("kill", step, *(["--force"] if force else []))
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]

    checked = site.run("check")
    assert checked.returncode == 0, checked.stderr[-2000:]
    after_kill, after_next_load = (json.loads(line) for line in checked.stdout.splitlines()[-2:])
    assert after_kill["cases"] in (REVISION_A, REVISION_B)
    assert after_kill["found"] == after_kill["cases"], "the index served is not of the database's revision"

    assert after_next_load["cases"] == (REVISION_A if force else REVISION_B)
    assert after_next_load["found"] == after_next_load["cases"]
    current = (site.index / "current").resolve().name
    builds = {p.name for p in site.index.glob("build-*")}
    assert builds == {current, site.first_build}, "a build other than the one served and the one it replaced is left"
    assert not list(site.index.glob("*.tmp*"))

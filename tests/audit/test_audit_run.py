"""`make audit` audits only where pip-audit's service answers, says so plainly where it does not, and fails when a
vulnerability is found. The service is replaced by fakes: these tests need no network."""

import sys

import pytest

from tests.audit import run

FOUND = [sys.executable, "-c", "print('Found 1 known vulnerability in 1 package'); raise SystemExit(1)"]
CLEAN = [sys.executable, "-c", "print('No known vulnerabilities found')"]


def unreachable(name: str, version: str) -> list[str]:
    raise OSError("Could not connect to PyPI's vulnerability feed")


def index_without_advisories(name: str, version: str) -> list[str]:
    raise LookupError(f"Dependency not found on PyPI and could not be audited: {name} ({version})")


def service_knowing_nothing(name: str, version: str) -> list[str]:
    return []


def service(name: str, version: str) -> list[str]:
    return ["PYSEC-2022-43012"] if (name, version) == run.CANARY else []


@pytest.mark.parametrize(
    "advisories, reason",
    [
        (unreachable, "cannot be reached"),
        (index_without_advisories, "serves no advisory data"),
        (service_knowing_nothing, "lists no advisory for setuptools 65.5.0"),
    ],
)
def test_without_a_service_that_answers_the_audit_says_so_plainly_and_passes(advisories, reason, capsys, tmp_path):
    """Regression: pip-audit on an index without advisory data skipped every package and said "No known
    vulnerabilities found"."""
    ran = tmp_path / "ran"
    command = [sys.executable, "-c", f"open({str(ran)!r}, 'w').close()"]
    assert run.main(command, advisories) == 0
    out = capsys.readouterr().out
    assert "NOT AUDITED" in out and reason in out
    assert not ran.exists(), "pip-audit must not run when its answers cannot be trusted"


def test_a_vulnerability_found_fails_the_audit():
    assert run.main(FOUND, service) == 1


def test_a_clean_audit_passes(capfd):
    assert run.main(CLEAN, service) == 0
    assert "No known vulnerabilities found" in capfd.readouterr().out


def test_the_make_target_runs_pip_audit_strictly_through_the_canary():
    """--strict: a package the service cannot look up fails the audit instead of being skipped silently."""
    from pathlib import Path

    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    recipe = makefile.split("\naudit:", 1)[1].split("\n\n", 1)[0]
    assert "tests/audit/run.py $(VENV)/bin/pip-audit --strict" in recipe
    requirements = (Path(__file__).resolve().parents[2] / "requirements-dev.txt").read_text().splitlines()
    assert any(line.startswith("pip-audit==") for line in requirements)
    assert any(line.startswith("setuptools==") for line in requirements)

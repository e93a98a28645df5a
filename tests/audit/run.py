"""`make audit`: run pip-audit on the virtualenv, but only where its vulnerability service really answers.

pip-audit treats a package its service does not know as skipped and still says "No known vulnerabilities found";
a package index that serves project pages but no per-release advisory data (the index this team's build machines
reach is one) would make every audit pass unread. So pip-audit's own PyPI service is first asked about a canary,
a release known to be vulnerable (setuptools 65.5.0: PYSEC-2022-43012 and later advisories). If it cannot answer,
or knows no advisory for it, the audit says plainly that nothing was audited and exits 0 (an air-gapped install
cannot ask). Otherwise pip-audit runs with --strict (a package it cannot look up fails the audit) and its exit
status is the audit's: non-zero when it finds a vulnerability.

Usage: python tests/audit/run.py PIP-AUDIT-COMMAND...
"""

from __future__ import annotations

import subprocess
import sys
from typing import Callable

CANARY = ("setuptools", "65.5.0")


def pypi_advisories(name: str, version: str) -> list[str]:
    """The advisory ids pip-audit's PyPI service gives for one release. OSError when the service cannot be reached,
    LookupError when it does not know the release."""
    from packaging.version import Version
    from pip_audit._service import PyPIService, ResolvedDependency, ServiceError

    try:
        spec, vulns = PyPIService(timeout=15).query(ResolvedDependency(name=name, version=Version(version)))
    except ServiceError as err:
        raise OSError(str(err)) from err
    if spec.is_skipped():
        raise LookupError(spec.skip_reason)
    return [v.id for v in vulns]


def canary_problem(advisories: Callable[[str, str], list[str]] = pypi_advisories) -> str | None:
    """Why the vulnerability service's answers cannot be trusted here, or None when it knows the canary's advisories."""
    name, version = CANARY
    try:
        found = advisories(name, version)
    except LookupError as err:
        return f"the vulnerability service does not know {name} {version} ({err}): this index serves no advisory data"
    except OSError as err:
        return f"the vulnerability service cannot be reached ({err})"
    if not found:
        return f"the vulnerability service lists no advisory for {name} {version}, which has several"
    return None


def main(argv: list[str], advisories: Callable[[str, str], list[str]] = pypi_advisories) -> int:
    if not argv:
        print(__doc__.strip().rsplit("\n", 1)[-1], file=sys.stderr)
        return 2
    problem = canary_problem(advisories)
    if problem:
        print(f"make audit: NOT AUDITED: {problem}.", flush=True)
        print("make audit: nothing was checked; run it on a machine that reaches pip-audit's service.", flush=True)
        return 0
    return subprocess.run(argv).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

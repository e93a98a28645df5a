"""Production settings: check --deploy is clean with a SECRET_KEY, and a missing SECRET_KEY is a clear error."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    # The browser tests' DJANGO_ALLOW_ASYNC_UNSAFE (tests/browser/conftest.py) is no part of a deployment.
    unset = ("SECRET_KEY", "DEBUG", "DATABASE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE")
    environment = {k: v for k, v in os.environ.items() if k not in unset}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_is_clean_under_serve_settings(tmp_path):
    done = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DEBUG="0",
        SQLITE_PATH=str(tmp_path / "db.sqlite3"),
        SECRET_KEY="a-long-random-secret-key-for-this-test-only-0123456789abcdef",
        ALLOWED_HOSTS="kb.example.com",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_missing_secret_key_with_debug_off_is_a_clear_error():
    done = manage("check", DEBUG="0")
    assert done.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in done.stdout + done.stderr

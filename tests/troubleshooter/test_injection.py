"""Hostile answers: refused with a message (400), and where a value does reach a script, it stays inert data."""

from __future__ import annotations

import dataclasses
import functools
import subprocess
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.conf import settings
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from troubleshooter.library import library_read
from troubleshooter.engine import tree_step
from troubleshooter.scripts import ScriptSource, script_render
from tests.kb.html_checks import assert_valid_html

SOURCE = ScriptSource("https://kb.example/kb/c/", (), "https://kb.example/troubleshoot/hang/", "rev")
HOSTILE = [
    "eth0; rm -rf ~",
    "$(id)",
    "`id`",
    "eth0\nrm -rf /",
    "eth0'",
    'eth0"',
    "eth0 && reboot",
    "eth0|cat",
    "${IFS}id",
    "<script>alert(1)</script>",
    "eth0@if5",
    "../../etc/passwd",
    "-rf",
    "eth0\x00",
]
IFNAME = {"when": "init", "init-log": "iface", "launcher": "torchrun", "container": "docker"}


@pytest.mark.django_db
@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_interface_is_refused_with_a_message(client, loaded_content, value):
    response = client.get("/troubleshoot/hang/?" + urlencode({**IFNAME, "iface": value}))
    assert response.status_code == 400
    page = response.content.decode()
    assert "That is not valid here" in page or "too long" in page
    assert "<script>alert(1)</script>" not in page
    assert_valid_html(response.content)


@pytest.mark.django_db
@pytest.mark.parametrize("value", HOSTILE[:6])
def test_a_hostile_value_never_yields_a_script(client, loaded_content, value):
    response = client.get("/troubleshoot/hang/fix.sh?" + urlencode({**IFNAME, "iface": value}))
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/plain")
    assert not response.content.startswith(b"#!")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "question, value",
    [
        ("minutes", "60; reboot"),
        ("minutes", "$(id)"),
        ("megatron-dir", "/work/$(id)"),
        ("megatron-dir", "/a b"),
        ("megatron-dir", "~/Megatron-LM"),
        ("megatron-dir", "/x/../../etc"),
        ("master-addr", "10.0.0.5;id"),
        ("master-addr", "node`id`"),
        ("master-port", "29500 && id"),
        ("hca", "mlx5_0:1;id"),
        ("dump-dir", "/tmp/'x'"),
        ("gpus", "8\nid"),
        ("shm-gib", "16g"),
    ],
)
def test_every_free_value_rule_refuses_shell_syntax(client, loaded_content, question, value):
    response = client.get("/troubleshoot/hang/?" + urlencode({question: value}))
    assert response.status_code == 400
    assert "errorlist" not in response.content.decode()
    assert "That is not valid here" in response.content.decode() or "Out of range" in response.content.decode()


def _step_with_raw_value(library, role: str, value: str, answers: dict[str, str]):
    """A step whose answer bypasses the rules, as if a rule were too lax: quoting alone must keep it inert."""
    step = tree_step(library.trees["hang"], answers)
    path = tuple(dataclasses.replace(a, value=value) if a.question.role == role else a for a in step.path)
    return dataclasses.replace(step, path=path)


def _run(script: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(script), *args], capture_output=True, text=True, cwd=cwd, timeout=60)


@functools.lru_cache(maxsize=1)
def _library():
    return library_read(settings.CONTENT_DIR)


@hypothesis_settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=40))
def test_any_text_that_reached_a_script_would_stay_quoted_and_inert(tmp_path_factory, value):
    library = _library()
    folder = tmp_path_factory.mktemp("inert")
    raw = f"{value}$(touch pwned)`touch pwned2`"
    step = _step_with_raw_value(library, "iface", raw, {**IFNAME, "iface": "eth0"})
    script = folder / "fix.sh"
    script.write_text(script_render(step, library.parts, SOURCE), encoding="utf-8")
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    _run(script, "--check", cwd=folder)
    result = subprocess.run(["bash", str(script), "printenv", "GLOO_SOCKET_IFNAME"], capture_output=True, cwd=folder, timeout=60)
    assert not (folder / "pwned").exists() and not (folder / "pwned2").exists()
    assert result.stdout == raw.encode() + b"\n"


def test_a_hostile_value_reaches_mpirun_as_one_literal_argument(library, tmp_path):
    hostile = "eth0; touch pwned"
    step = _step_with_raw_value(
        library,
        "iface",
        hostile,
        {"when": "init", "init-log": "iface", "launcher": "mpirun", "container": "docker", "iface": "eth0"},
    )
    script = tmp_path / "fix.sh"
    script.write_text(script_render(step, library.parts, SOURCE))
    fake = tmp_path / "mpirun"
    fake.write_text(
        "#!/usr/bin/env bash\nif [ \"$1\" = --version ]; then echo 'mpirun (Open MPI) 4.1.6'; exit 0; fi\nprintf '%s\\n' \"$@\"\n"
    )
    fake.chmod(0o755)
    result = _run(script, str(fake), "hostname", cwd=tmp_path)
    assert hostile in result.stdout.splitlines()
    assert not (tmp_path / "pwned").exists()


def test_comments_cannot_be_escaped_by_a_newline(library):
    step = _step_with_raw_value(library, "iface", "eth0\nrm -rf /", {**IFNAME, "iface": "eth0"})
    text = script_render(step, library.parts, ScriptSource("https://x/\nrm -rf /", (), "https://y/\ntouch z", "r\nx"))
    header = text.split("set -euo pipefail")[0]
    assert all(line.startswith("#") or not line for line in header.splitlines())

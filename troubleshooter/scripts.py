"""Compose the fix script of a leaf: a bash wrapper, deterministic for a given state. Pure: no Django.

`fix.sh --check` runs the read-only checks (a missing tool is reported, never fatal);
`fix.sh <launch command...>` applies the settings in the form the launcher needs (exported for
torchrun, accelerate, deepspeed and srun; `-x NAME` plus interface pinning inserted into an
Open MPI `mpirun` line), prints what must change in code or flags, then runs the command. A
fix with no setting says so and runs the command unchanged. A variable that PyTorch renamed
(variables.Variable.renamed) is exported under the name the installed release reads, decided at
run time; when the release cannot be read, neither name is set and the script says so.
User values reach the script only through rules (engine) and shlex quoting (here).
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Mapping

from troubleshooter.engine import Step
from troubleshooter.parts import PLACEHOLDER_RE, Only, Part
from troubleshooter.variables import DEEPSPEED_FORWARDED_PREFIXES, VARIABLES, variable_name

EXAMPLE_COMMANDS = {
    "torchrun": "torchrun --nproc-per-node=8 train.py",
    "accelerate": "accelerate launch --num_processes 8 train.py",
    "deepspeed": "deepspeed --num_gpus 8 train.py --deepspeed ds_config.json",
    "mpirun": "mpirun -np 16 -H nodeA:8,nodeB:8 python train.py",
    "srun": "srun --ntasks-per-node=8 python train.py",
}

LAUNCHER_NOTES = {
    "torchrun": "torchrun passes this environment to its workers. On several nodes, run this wrapper around torchrun on every node.",
    "accelerate": "accelerate launch passes this environment to its processes. On several nodes, run this wrapper on every node.",
    "srun": "srun passes the whole environment to its tasks by default (--export=ALL). If your job uses --export=NONE "
            "or a list, add the names above to it.",
}


class ScriptError(ValueError):
    """Two parts set one variable to different values: a content bug that the tests catch for every path."""


@dataclass(frozen=True)
class ScriptSource:
    """Where the script comes from, printed in its header so a copy can always be traced back."""
    case_url: str
    fix_step_urls: tuple[str, ...]
    wizard_url: str
    revision: str


@dataclass(frozen=True)
class _Export:
    name: str
    value: str
    why: str
    reader: str
    debug_only: bool
    renamed: tuple[str, str] | None = None  # (release, newer name) chosen at run time

    @property
    def shown(self) -> str:
        """The setting as the user reads it; both names for a renamed variable."""
        if self.renamed:
            release, newer = self.renamed
            return f"{newer}={self.value} (PyTorch {release} and newer; {self.name}={self.value} before)"
        return f"{self.name}={self.value}"


@dataclass(frozen=True)
class ScriptSummary:
    """What a leaf's fix.sh does, read from the same selection the composer renders, so the page cannot promise
    more or less than the script: the variables `./fix.sh CMD` exports, the interface it pins Open MPI to,
    what it does on the node first, and the tools `--check` runs."""
    exports: tuple[str, ...]  # as exported; a renamed variable as "NEWER (OLDER before PyTorch X)"
    mpi_interface: str | None
    actions: tuple[str, ...]
    check_tools: tuple[str, ...]
    check_count: int


def script_summary(step: Step, parts: Mapping[str, Part]) -> ScriptSummary:
    """The summary of the script script_render makes for this step."""
    if step.leaf is None:
        raise ValueError("a script needs a step that reached a leaf")
    roles = step.roles
    chosen = [parts[part_id] for part_id in step.leaf.script]
    exports = tuple(f"{e.renamed[1]} ({e.name} before PyTorch {e.renamed[0]})" if e.renamed else e.name
                    for e in _exports(chosen, roles))
    mpi_iface = next((roles[p.mpi_interface] for p in chosen if p.mpi_interface and roles["launcher"] == "mpirun"), None)
    actions = tuple(_fill_text(a.title, roles) for p in chosen for a in p.actions if _applies(a.only, roles))
    checks = [c for p in chosen for c in p.checks if _applies(c.only, roles)]
    tools = tuple(dict.fromkeys(c.tool for c in checks))
    return ScriptSummary(exports=exports, mpi_interface=mpi_iface, actions=actions, check_tools=tools, check_count=len(checks))


def script_sets_anything(step: Step, parts: Mapping[str, Part]) -> bool:
    """Whether the leaf's script changes how the command runs (exports, Open MPI flags): the page text says so."""
    return _sets_anything([parts[part_id] for part_id in step.leaf.script], step.roles)


def _sets_anything(parts: list[Part], roles: dict[str, str]) -> bool:
    pins_mpi = roles.get("launcher") == "mpirun" and any(p.mpi_interface for p in parts)
    return bool(_exports(parts, roles)) or pins_mpi


def script_render(step: Step, parts: Mapping[str, Part], source: ScriptSource) -> str:
    """The whole fix.sh text for a step that reached a leaf."""
    if step.leaf is None:
        raise ValueError("a script needs a step that reached a leaf")
    roles = step.roles
    chosen = [parts[part_id] for part_id in step.leaf.script]
    exports = _exports(chosen, roles)
    launcher = roles["launcher"]
    mpi_iface = next((roles[p.mpi_interface] for p in chosen if p.mpi_interface and launcher == "mpirun"), None)
    instructions = [_fill_text(i.text, roles) for p in chosen for i in p.instructions if _applies(i.only, roles)]
    instructions += _launcher_notes(launcher, exports)
    lines = _header(step, source, bool(exports or mpi_iface))
    lines += _helpers()
    lines += _checks_function(chosen, roles)
    lines += _settings_function(chosen, roles, exports)
    lines += _actions_function(chosen, roles)
    lines += _instructions_function(instructions, exports)
    lines += _launch_function(launcher, exports, mpi_iface)
    lines += _main(step.leaf.title, bool(exports or mpi_iface))
    return "\n".join(lines) + "\n"


def _header(step: Step, source: ScriptSource, sets_anything: bool) -> list[str]:
    launcher = step.roles["launcher"]
    lines = ["#!/usr/bin/env bash", f"# fix.sh: {_comment(step.leaf.title)}", "#",
             f"# Case:      {_comment(source.case_url)}"]
    lines += [f"# Fix step:  {_comment(url)}" for url in source.fix_step_urls]
    lines += [f"# Made by:   {_comment(source.wizard_url)}", f"# Content revision: {_comment(source.revision)}", "#",
              "# Your answers:"]
    lines += [f"#   {_comment(a.question.text)} -> {_comment(a.label)}" for a in step.path]
    lines += ["#", "# Usage:",
              "#   ./fix.sh --check              read-only checks on this node; changes nothing",
              ("#   ./fix.sh LAUNCH COMMAND...    apply the settings below, print what else to change, run the command"
               if sets_anything else
               "#   ./fix.sh LAUNCH COMMAND...    this fix sets nothing: print what to change, then run the command as it is"),
              f"#   for example: ./fix.sh {_comment(EXAMPLE_COMMANDS[launcher])}",
              "set -euo pipefail", ""]
    return lines


def _helpers() -> list[str]:
    return [
        "say() { printf '%s\\n' \"$@\"; }",
        "note() { printf 'fix.sh: %s\\n' \"$@\" >&2; }",
        "",
        "# Starts one read-only check; a missing tool is reported and skipped, never fatal.",
        "have() {",
        "  printf '\\n== %s\\n' \"$2\"",
        "  if command -v \"$1\" >/dev/null 2>&1; then",
        "    return 0",
        "  fi",
        "  say \"   skipped: '$1' is not installed or not on PATH\"",
        "  return 1",
        "}",
        "failed() { say \"   (exited with status $1)\"; }",
        "",
        "# The installed PyTorch release as MAJOR.MINOR, empty when python or torch is missing; never fails.",
        "torch_release() {",
        "  local py",
        "  py=$(command -v python || command -v python3 || true)",
        "  if [ -n \"$py\" ]; then",
        "    \"$py\" -c 'import torch; print(\".\".join(torch.__version__.split(\".\")[:2]))' 2>/dev/null || true",
        "  fi",
        "}",
        "",
        "# True when release $1 (MAJOR.MINOR) is $2 (MAJOR.MINOR) or newer; false when $1 is empty or odd.",
        "release_at_least() {",
        "  case \"$1\" in",
        "    [0-9]*.[0-9]*) ;;",
        "    *) return 1 ;;",
        "  esac",
        "  local major=${1%%.*} minor=${1#*.} want_major=${2%%.*} want_minor=${2#*.}",
        "  minor=${minor%%[!0-9]*}",
        "  [ \"$major\" -gt \"$want_major\" ] || { [ \"$major\" -eq \"$want_major\" ] && [ \"${minor:-0}\" -ge \"$want_minor\" ]; }",
        "}",
        "",
    ]


def _checks_function(parts: list[Part], roles: dict[str, str]) -> list[str]:
    lines = ["checks() {", "  say 'Read-only checks. Nothing is changed.'"]
    for part in parts:
        checks = [c for c in part.checks if _applies(c.only, roles)]
        if not checks:
            continue
        lines.append(f"  # {_comment(part.title)}")
        for check in checks:
            lines.append(f"  if have {shlex.quote(check.tool)} {_sh_word(_fill_text(check.title, roles))}; then")
            lines.append("    {")
            lines += _indent(_fill_shell(check.run, roles), "      ")
            lines.append("    } || failed \"$?\"")
            lines.append("  fi")
    lines += ["  say '' 'Settings that ./fix.sh LAUNCH COMMAND... would apply:'", "  show_settings",
              "  say '' 'Nothing was changed. To apply the fix, run: ./fix.sh <your launch command>'" if _sets_anything(parts, roles)
              else "  say '' 'Nothing was changed. ./fix.sh <your launch command> prints the changes to make, then runs it as it is.'",
              "}", ""]
    return lines


def _settings_function(parts: list[Part], roles: dict[str, str], exports: list[_Export]) -> list[str]:
    lines = ["# The settings, exported so the launcher and every rank it starts inherit them.", "settings() {"]
    if any(e.renamed for e in exports):
        lines += ["  local torch_rel", "  torch_rel=$(torch_release)"]
    for export in exports:
        lines.append(f"  # {_comment(export.reader)}: {_comment(export.why)}")
        if export.debug_only:
            lines.append("  # NCCL classes this as a debugging variable: use it to test or unblock, do not keep it in job scripts.")
        if export.renamed:
            release, newer = export.renamed
            missing = (f"could not read the PyTorch version with python here: {newer} (PyTorch {release}+) / "
                       f"{export.name} (older) not set; export the one your release reads")
            lines += ["  if [ -z \"$torch_rel\" ]; then",
                      f"    note {_sh_word(missing)}",
                      f"  elif release_at_least \"$torch_rel\" {release}; then",
                      f"    export {newer}={_sh_word(export.value)}",
                      "  else",
                      f"    export {export.name}={_sh_word(export.value)}",
                      "  fi"]
        else:
            lines.append(f"  export {export.name}={_sh_word(export.value)}")
    if not exports:
        lines.append("  : # this fix sets no environment variable: it prints what to change and runs your command as it is")
    lines += ["}", "", "show_settings() {"]
    lines += [f"  say {_sh_word('  ' + e.shown)}" for e in exports] or \
        ["  say '  (none: this fix sets no environment variable; it prints what to change and runs your command as it is)'"]
    lines += ["}", ""]
    return lines


def _actions_function(parts: list[Part], roles: dict[str, str]) -> list[str]:
    lines = ["# Changes made on this node before the launch.", "actions() {"]
    count = 0
    for part in parts:
        for action in (a for a in part.actions if _applies(a.only, roles)):
            count += 1
            lines.append(f"  # {_comment(part.title)}: {_comment(action.title)}")
            lines.append(f"  note {_sh_word(_fill_text(action.title, roles))}")
            lines += _indent(_fill_shell(action.run, roles), "  ")
    if not count:
        lines.append("  :")
    lines += ["}", ""]
    return lines


def _instructions_function(instructions: list[str], exports: list[_Export]) -> list[str]:
    lines = ["# What this wrapper cannot change for you: flags, code and the platform.", "instructions() {"]
    if exports:
        lines.append("  note 'exported for this run:'")
        lines += [f"  note {_sh_word('  ' + e.shown)}" for e in exports]
    else:
        lines.append("  note 'this fix sets no environment variable; your command runs as it is.'")
    if instructions:
        lines.append("  note 'also change, outside this wrapper:'")
        lines += [f"  note {_sh_word('  - ' + text)}" for text in instructions]
    lines += ["}", ""]
    return lines


def _launch_function(launcher: str, exports: list[_Export], mpi_iface: str | None) -> list[str]:
    if launcher != "mpirun" or not (exports or mpi_iface):
        return ["launch() {", "  note \"running: $*\"", "  exec \"$@\"", "}", ""]
    exported = [token for e in exports if not e.renamed for token in ("-x", e.name)]
    renamed = [name for e in exports if e.renamed for name in (e.renamed[1], e.name)]
    ompi4 = list(exported)
    ompi5 = list(exported)
    if mpi_iface:
        iface = shlex.quote(mpi_iface)
        ompi4 += ["--mca", "btl_tcp_if_include", iface, "--mca", "oob_tcp_if_include", iface]
        ompi5 += ["--mca", "btl_tcp_if_include", iface, "--prtemca", "oob_tcp_if_include", iface]
    shown = " ".join(ompi4)
    # A renamed variable is forwarded under whichever of its names settings() exported.
    forward = ["  local name", f"  for name in {' '.join(renamed)}; do",
               "    if [ -n \"${!name+x}\" ]; then",
               "      flags+=(-x \"$name\")",
               "    fi",
               "  done"] if renamed else []
    wrapped_note = ["      note \"  and -x for whichever of these is set: " + " ".join(renamed) + "\""] if renamed else []
    return [
        "# Open MPI does not pass the environment to remote ranks by itself: insert -x for every setting,",
        "# and pin both of its TCP channels (the runtime's out-of-band one and the MPI data one).",
        "launch() {",
        "  local -a flags",
        "  case \"$(basename -- \"$1\")\" in",
        "    mpirun|mpiexec|orterun|prterun) ;;",
        "    *)",
        "      note \"this wrapper was made for mpirun; add these options to the mpirun line that $1 runs:\"",
        f"      note {_sh_word('  ' + shown)}",
        *wrapped_note,
        "      note \"running: $*\"",
        "      exec \"$@\"",
        "      ;;",
        "  esac",
        "  local version",
        "  version=$(\"$1\" --version 2>&1 || true)",
        "  case \"$version\" in",
        "    *PRRTE*|*\"Open MPI) 5.\"*|*\"Open MPI) v5.\"*|*\"Open MPI) 6.\"*)",
        "      # Open MPI 5 runs on PRRTE: the out-of-band interface is a --prtemca parameter.",
        f"      flags=({' '.join(ompi5)})",
        "      ;;",
        "    *\"Open MPI\"*)",
        f"      flags=({' '.join(ompi4)})",
        "      ;;",
        "    *)",
        "      note \"$1 is not Open MPI: -x and --mca are Open MPI options. Pass the exported variables with your MPI's own\"",
        "      note \"option (MPICH and Intel MPI: -genvlist NAME,...) and pin its network interface as its documentation says.\"",
        "      note \"running: $*\"",
        "      exec \"$@\"",
        "      ;;",
        "  esac",
        *forward,
        "  local program=$1",
        "  shift",
        "  note \"running: $program ${flags[*]} $*\"",
        "  exec \"$program\" \"${flags[@]}\" \"$@\"",
        "}",
        "",
    ]


def _main(title: str, sets_anything: bool) -> list[str]:
    run_line = ("  say '       ./fix.sh LAUNCH COMMAND...   apply the settings, print what else to change, run the command'"
                if sets_anything else
                "  say '       ./fix.sh LAUNCH COMMAND...   sets nothing: print what to change, run the command as it is'")
    return [
        "usage() {",
        f"  say {_sh_word('fix.sh: ' + _comment(title))}",
        "  say 'usage: ./fix.sh --check             read-only checks; changes nothing'",
        run_line,
        "}",
        "",
        "case \"${1:-}\" in",
        "  --check)",
        "    checks",
        "    ;;",
        "  -h|--help)",
        "    usage",
        "    ;;",
        "  ''|-*)",
        "    usage >&2",
        "    exit 2",
        "    ;;",
        "  *)",
        "    settings",
        "    actions",
        "    instructions",
        "    launch \"$@\"",
        "    ;;",
        "esac",
    ]


def _exports(parts: list[Part], roles: dict[str, str]) -> list[_Export]:
    exports: dict[str, _Export] = {}
    torch = roles.get("torch")
    for part in parts:
        for setting in (s for s in part.env if _applies(s.only, roles)):
            variable = VARIABLES[setting.name]
            name = variable_name(variable, torch)
            value = _fill_text(setting.value, roles)
            if name in exports and exports[name].value != value:
                raise ScriptError(f"{name} is set to both {exports[name].value!r} and {value!r}")
            exports.setdefault(name, _Export(name, value, setting.why, variable.reader, variable.debug_only, variable.renamed))
    return list(exports.values())


def _launcher_notes(launcher: str, exports: list[_Export]) -> list[str]:
    if not exports:
        return []
    if launcher == "deepspeed":
        held_back = [e for e in exports if not e.name.startswith(DEEPSPEED_FORWARDED_PREFIXES)]
        note = ("deepspeed passes this environment to the ranks on this node. On several nodes its launcher forwards only "
                "variables whose names start with NCCL, UCX, PYTHON, MV2 or MLFLOW")
        if held_back:
            lines = ", ".join(e.shown for e in held_back)
            return [f"{note}; put these lines into .deepspeed_env in the launch directory or your home: {lines}"]
        return [note + "; all the settings above qualify."]
    return [LAUNCHER_NOTES[launcher]] if launcher in LAUNCHER_NOTES else []


def _applies(only: Only, roles: dict[str, str]) -> bool:
    return all(roles.get(role) in values for role, values in only.items())


def _value(roles: dict[str, str], match: re.Match) -> str:
    value = roles[match.group(1)]
    return str(int(value) * 60) if match.group(2) else value


def _fill_text(text: str, roles: dict[str, str]) -> str:
    """Placeholders replaced by raw values, for text that is then quoted as a whole (values, messages)."""
    return PLACEHOLDER_RE.sub(lambda m: _value(roles, m), text)


def _fill_shell(snippet: str, roles: dict[str, str]) -> str:
    """Placeholders replaced by shell-quoted words, for snippets that run as code."""
    return PLACEHOLDER_RE.sub(lambda m: shlex.quote(_value(roles, m)), snippet)


def _sh_word(text: str) -> str:
    """One shell word. shlex.quote leaves '=x' bare, which shellcheck reads as a typo for '=='; quote it anyway."""
    quoted = shlex.quote(text)
    return f"'{text}'" if quoted == text and text.startswith("=") else quoted


def _comment(text: str) -> str:
    """Text for a comment or message: one line, whatever the source, so nothing can leave the comment."""
    return re.sub(r"[\x00-\x1f\x7f]+", " ", text).strip()


def _indent(snippet: str, prefix: str) -> list[str]:
    return [prefix + line if line.strip() else "" for line in snippet.strip("\n").splitlines()]

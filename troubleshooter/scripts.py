"""Compose the fix script of a leaf: a bash wrapper, deterministic for a given state. Pure: no Django.

`fix.sh --check` runs the read-only checks (a missing tool is reported, never fatal);
`fix.sh <launch command...>` applies the settings in the form the launcher needs (exported for
torchrun, accelerate, deepspeed and srun; `-x NAME` plus interface pinning inserted into an
Open MPI `mpirun` line), prints what must change in code or flags, then runs the command. A
fix with no setting says so and runs the command unchanged. A variable that PyTorch renamed
(variables.Variable.renamed) is exported under the name the installed release reads, decided at
run time; when the release cannot be read, neither name is set and the script says so.
User values reach the script only through rules (engine) and shlex quoting (here).

The static bash lives in script_skeleton/*.sh, so editors and shellcheck read it as bash; this module
writes only what depends on the leaf and the answers. A skeleton line `: @slot@` (a shell no-op, so the
skeleton itself stays a valid script) is replaced by the lines made for that slot, at its indentation.
Comments in the skeleton are copied into every script, so the slot convention is explained here.
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass
from importlib.resources import files
from typing import Mapping

from troubleshooter.engine import Step
from troubleshooter.parts import PLACEHOLDER_RE, Only, Part
from troubleshooter.variables import DEEPSPEED_FORWARDED_PREFIXES, VARIABLES, variable_name

_SKELETON = files("troubleshooter") / "script_skeleton"
_SLOT_RE = re.compile(r"( *): @([a-z][a-z0-9_]*)@")

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
    exports = tuple(
        f"{e.renamed[1]} ({e.name} before PyTorch {e.renamed[0]})" if e.renamed else e.name for e in _exports(chosen, roles)
    )
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
    """The whole fix.sh text for a step that reached a leaf: the skeleton with this leaf's pieces filled in."""
    if step.leaf is None:
        raise ValueError("a script needs a step that reached a leaf")
    roles = step.roles
    chosen = [parts[part_id] for part_id in step.leaf.script]
    exports = _exports(chosen, roles)
    launcher = roles["launcher"]
    mpi_iface = next((roles[p.mpi_interface] for p in chosen if p.mpi_interface and launcher == "mpirun"), None)
    instructions = [_fill_text(i.text, roles) for p in chosen for i in p.instructions if _applies(i.only, roles)]
    instructions += _launcher_notes(launcher, exports)
    sets_anything = bool(exports or mpi_iface)
    lines = _skeleton_fill(
        "fix.sh",
        {
            "about": _about(step, source),
            "usage_comment": _usage_comment(launcher, sets_anything),
            "checks": _checks(chosen, roles),
            "checks_done": [
                "say '' 'Nothing was changed. To apply the fix, run: ./fix.sh <your launch command>'"
                if sets_anything
                else "say '' 'Nothing was changed. ./fix.sh <your launch command> prints the changes to make, "
                "then runs it as it is.'"
            ],
            "settings": _settings(exports),
            "show_settings": [f"say {_sh_word('  ' + e.shown)}" for e in exports]
            or ["say '  (none: this fix sets no environment variable; it prints what to change and runs your command as it is)'"],
            "actions": _actions(chosen, roles),
            "instructions": _instructions(instructions, exports),
            "launch": _launch(launcher, exports, mpi_iface),
            "usage_title": [f"say {_sh_word('fix.sh: ' + _comment(step.leaf.title))}"],
            "usage_run": [
                "say '       ./fix.sh LAUNCH COMMAND...   apply the settings, print what else to change, run the command'"
                if sets_anything
                else "say '       ./fix.sh LAUNCH COMMAND...   sets nothing: print what to change, run the command as it is'"
            ],
        },
    )
    return "\n".join(lines) + "\n"


@functools.cache
def _skeleton(name: str) -> tuple[str, ...]:
    return tuple(_SKELETON.joinpath(name).read_text(encoding="utf-8").splitlines())


def _skeleton_fill(name: str, fills: Mapping[str, list[str]]) -> list[str]:
    """The skeleton's lines, each `: @slot@` line replaced by its fill, indented as the slot line is.

    Every slot must be filled and every fill must have a slot, so a renamed slot fails loudly."""
    lines: list[str] = []
    slots: set[str] = set()
    for line in _skeleton(name):
        match = _SLOT_RE.fullmatch(line)
        if match is None:
            lines.append(line)
            continue
        indent, slot = match.groups()
        slots.add(slot)
        lines += [indent + filled if filled else "" for filled in fills[slot]]
    if slots != set(fills):
        raise ValueError(f"{name}: slots {sorted(slots)} but fills for {sorted(fills)}")
    return lines


def _about(step: Step, source: ScriptSource) -> list[str]:
    lines = [f"# fix.sh: {_comment(step.leaf.title)}", "#", f"# Case:      {_comment(source.case_url)}"]
    lines += [f"# Fix step:  {_comment(url)}" for url in source.fix_step_urls]
    lines += [
        f"# Made by:   {_comment(source.wizard_url)}",
        f"# Content revision: {_comment(source.revision)}",
        "#",
        "# Your answers:",
    ]
    lines += [f"#   {_comment(a.question.text)} -> {_comment(a.label)}" for a in step.path]
    return lines


def _usage_comment(launcher: str, sets_anything: bool) -> list[str]:
    return [
        (
            "#   ./fix.sh LAUNCH COMMAND...    apply the settings below, print what else to change, run the command"
            if sets_anything
            else "#   ./fix.sh LAUNCH COMMAND...    this fix sets nothing: print what to change, then run the command as it is"
        ),
        f"#   for example: ./fix.sh {_comment(EXAMPLE_COMMANDS[launcher])}",
    ]


def _checks(parts: list[Part], roles: dict[str, str]) -> list[str]:
    lines: list[str] = []
    for part in parts:
        checks = [c for c in part.checks if _applies(c.only, roles)]
        if not checks:
            continue
        lines.append(f"# {_comment(part.title)}")
        for check in checks:
            lines.append(f"if have {shlex.quote(check.tool)} {_sh_word(_fill_text(check.title, roles))}; then")
            lines.append("  {")
            lines += _indent(_fill_shell(check.run, roles), "    ")
            lines.append('  } || failed "$?"')
            lines.append("fi")
    return lines


def _settings(exports: list[_Export]) -> list[str]:
    lines: list[str] = []
    if any(e.renamed for e in exports):
        lines += ["local torch_rel", "torch_rel=$(torch_release)"]
    for export in exports:
        lines.append(f"# {_comment(export.reader)}: {_comment(export.why)}")
        if export.debug_only:
            lines.append("# NCCL classes this as a debugging variable: use it to test or unblock, do not keep it in job scripts.")
        if export.renamed:
            release, newer = export.renamed
            missing = (
                f"could not read the PyTorch version with python here: {newer} (PyTorch {release}+) / "
                f"{export.name} (older) not set; export the one your release reads"
            )
            lines += [
                'if [ -z "$torch_rel" ]; then',
                f"  note {_sh_word(missing)}",
                f'elif release_at_least "$torch_rel" {release}; then',
                f"  export {newer}={_sh_word(export.value)}",
                "else",
                f"  export {export.name}={_sh_word(export.value)}",
                "fi",
            ]
        else:
            lines.append(f"export {export.name}={_sh_word(export.value)}")
    if not exports:
        lines.append(": # this fix sets no environment variable: it prints what to change and runs your command as it is")
    return lines


def _actions(parts: list[Part], roles: dict[str, str]) -> list[str]:
    lines: list[str] = []
    for part in parts:
        for action in (a for a in part.actions if _applies(a.only, roles)):
            lines.append(f"# {_comment(part.title)}: {_comment(action.title)}")
            lines.append(f"note {_sh_word(_fill_text(action.title, roles))}")
            lines += _indent(_fill_shell(action.run, roles), "")
    return lines or [":"]


def _instructions(instructions: list[str], exports: list[_Export]) -> list[str]:
    if exports:
        lines = ["note 'exported for this run:'"] + [f"note {_sh_word('  ' + e.shown)}" for e in exports]
    else:
        lines = ["note 'this fix sets no environment variable; your command runs as it is.'"]
    if instructions:
        lines.append("note 'also change, outside this wrapper:'")
        lines += [f"note {_sh_word('  - ' + text)}" for text in instructions]
    return lines


def _launch(launcher: str, exports: list[_Export], mpi_iface: str | None) -> list[str]:
    """Open MPI's launch function when there is something to pass to mpirun; otherwise the command runs as given."""
    if launcher != "mpirun" or not (exports or mpi_iface):
        return list(_skeleton("launch_exec.sh"))
    exported = [token for e in exports if not e.renamed for token in ("-x", e.name)]
    renamed = [name for e in exports if e.renamed for name in (e.renamed[1], e.name)]
    ompi4 = list(exported)
    ompi5 = list(exported)
    if mpi_iface:
        iface = shlex.quote(mpi_iface)
        ompi4 += ["--mca", "btl_tcp_if_include", iface, "--mca", "oob_tcp_if_include", iface]
        ompi5 += ["--mca", "btl_tcp_if_include", iface, "--prtemca", "oob_tcp_if_include", iface]
    wrapped = [f"note {_sh_word('  ' + ' '.join(ompi4))}"]
    if renamed:
        wrapped.append('note "  and -x for whichever of these is set: ' + " ".join(renamed) + '"')
    # A renamed variable is forwarded under whichever of its names settings() exported.
    forward = (
        [
            "local name",
            f"for name in {' '.join(renamed)}; do",
            '  if [ -n "${!name+x}" ]; then',
            '    flags+=(-x "$name")',
            "  fi",
            "done",
        ]
        if renamed
        else []
    )
    return _skeleton_fill(
        "launch_open_mpi.sh",
        {
            "wrapped_flags": wrapped,
            "flags_open_mpi_5": [f"flags=({' '.join(ompi5)})"],
            "flags_open_mpi_4": [f"flags=({' '.join(ompi4)})"],
            "forward_renamed": forward,
        },
    )


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
        note = (
            "deepspeed passes this environment to the ranks on this node. On several nodes its launcher forwards only "
            "variables whose names start with NCCL, UCX, PYTHON, MV2 or MLFLOW"
        )
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

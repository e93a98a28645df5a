"""Find the environment variables, long flags, Open MPI MCA parameters and commands that content names.

Pure Python (no Django). `tests/kb/content/test_content_names.py` checks every name found in content/ against
the committed allow-list `content/names.yaml`, so a made-up or removed name cannot come back.

What counts as a name (every rule works on one line at a time and runs in linear time):

- env: an UPPER_SNAKE token with a known prefix (`NCCL_`, `TORCH_`, `SLURM_`...) or one of a few exact
  names (`RANK`, `MAX_JOBS`...), found anywhere: prose, code, log lines, regexes, YAML. A token that
  starts or ends with `_` is a prefix or an OpType (`TORCH_FR_*`, `NCCL_...`, `_ALLGATHER_BASE`), not a
  name. Tokens from known non-variable families (C enums such as `CUDA_ERROR_...`) are skipped.
- flag: `--word` in code (Markdown code spans and fenced blocks, YAML code spans, every line of a
  script part). `--mca NAME` / `-mca NAME` / `--prtemca NAME` also yield NAME as kind `mca`, and so
  does `OMPI_MCA_NAME=` (the environment form of an MCA parameter; the variable itself is kind env).
- command: the first word of each shell command in fenced `bash`/`sh` blocks and in script parts'
  `run:` snippets (after `|`, `&&`, `||`, `;`, `$(`, and after `sudo`, `env`, `VAR=value`...).
  Shell keywords and builtins are not commands of any software and are not reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

# Kinds in content/names.yaml. `symbol` is a C or Python identifier that looks like a variable
# (a macro such as NVTE_CHECK_CUDA named in a log's release note): the extractor reports it as `env`,
# and an `env` occurrence is allowed when the name is listed as env or as symbol.
KINDS = ("env", "flag", "mca", "command", "symbol")

# Prefixes of variables read by the software this knowledge base covers. A token must be longer than
# its prefix (`NCCL_` alone is a placeholder).
ENV_PREFIXES = (
    "NCCL_",
    "TORCH_",
    "TORCHELASTIC_",
    "TORCHINDUCTOR_",
    "PYTORCH_",
    "NVTE_",
    "UB_",
    "CUDA_",
    "CUDNN_",
    "NVIDIA_",
    "OMPI_",
    "PMIX_",
    "PRTE_",
    "PMI_",
    "UCX_",
    "MASTER_",
    "WORLD_",
    "LOCAL_",
    "GROUP_",
    "ROLE_",
    "HF_",
    "HUGGINGFACE_",
    "TRANSFORMERS_",
    "ACCELERATE_",
    "DEEPSPEED_",
    "DS_",
    "OMP_",
    "SLURM_",
    "SLURMD_",
    "GLOO_",
    "MPI_",
    "NVSHMEM_",
    "FI_",
    "LD_",
    "PYTHON",
    "MKL_",
    "KMP_",
    "TE_",
    "MEGATRON_",
    "AUTOTRAIN_",
    "TRL_",
    "NVCC_",
    "NVLS_",
)
ENV_EXACT = frozenset({"RANK", "MAX_JOBS", "WORLD_SIZE", "NPROC_PER_NODE"})
# Families that share a prefix with variables but are error codes of a C API, never variables.
NOT_ENV_PREFIXES = ("CUDA_ERROR_", "CUDA_SUCCESS", "MPI_ERR_", "MPI_ERRORS_", "MPI_SUCCESS")
# Family names written without their trailing `_` (`(NCCL|OMPI_MCA)_` in a grep pattern).
PREFIX_WORDS = frozenset({"OMPI_MCA", "TORCH_NCCL", "TORCH_FR", "NCCL_IB", "NVTE_UB", "SLURM_JOB"})

# Words a shell command line can start with that are not commands of any software.
SHELL_WORDS = frozenset(
    {
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "for",
        "in",
        "do",
        "done",
        "while",
        "until",
        "case",
        "esac",
        "function",
        "select",
        "time",
        "!",
        "{",
        "}",
        "[",
        "[[",
        "]]",
        "]",
        "export",
        "local",
        "set",
        "unset",
        "echo",
        "printf",
        "cd",
        "read",
        "return",
        "exit",
        "source",
        ".",
        "eval",
        "exec",
        "test",
        "true",
        "false",
        "shift",
        "trap",
        "wait",
        "command",
        "type",
        "declare",
        "readonly",
        "let",
        "alias",
        "ulimit",
        "umask",
        "break",
        "continue",
        "pushd",
        "popd",
        "kill",
        "jobs",
        "fg",
        "bg",
        "hash",
        ":",
        "builtin",
        "shopt",
        "getopts",
    }
)
# Prefix words after which the next word is the command.
COMMAND_WRAPPERS = frozenset({"sudo", "env", "nohup", "time", "exec", "command", "xargs", "watch", "timeout", "!"})

_TOKEN = re.compile(r"\\[A-Za-z]|[A-Za-z0-9_]+")
_FLAG = re.compile(r"(?:^|[\s\"'`(=\[,;|{])(--[a-z][a-z0-9_-]*)")
_MCA = re.compile(r"(?:^|[\s\"'`(])(?:--mca|-mca|--prtemca|--gmca)\s+([a-z][a-z0-9_]*)")
_OMPI_ENV_MCA = re.compile(r"\bOMPI_MCA_([a-z][a-z0-9_]*)")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_FENCE = re.compile(r"^\s*(```|~~~)\s*([A-Za-z0-9_+-]*)")
_RUN_KEY = re.compile(r"^(\s*)(?:-\s+)?run:\s?(.*)$")
_COMMAND_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*$")
_SECTION = re.compile(r"^##\s[^#\n]*\{#([a-z0-9-]+)\}")
SHELL_LANGUAGES = frozenset({"bash", "sh", "shell", "console", "zsh"})


@dataclass(frozen=True)
class Occurrence:
    name: str
    kind: str
    file: str
    line: int
    section: str = ""  # case pages: the id of the level-2 section ("front-matter" above the body)

    def where(self) -> str:
        return f"{self.file}:{self.line}"


def is_env_name(token: str) -> bool:
    """True for an UPPER_SNAKE token that is a variable name of the covered software (not a prefix,
    an OpType, a constant or an ordinary upper-case word)."""
    if not token or token[0] == "_" or token[-1] == "_" or not token[0].isalpha():
        return False
    if not token.replace("_", "").isalnum() or token.upper() != token:
        return False
    if token in ENV_EXACT:
        return True
    if not any(token.startswith(p) and len(token) > len(p) for p in ENV_PREFIXES):
        return False
    if token in PREFIX_WORDS or token.startswith(NOT_ENV_PREFIXES):
        return False
    return True


def env_names(line: str) -> Iterator[str]:
    for match in _TOKEN.finditer(line):
        token = match.group(0)
        if token[0] != "\\" and is_env_name(token):
            yield token


def flag_names(code: str) -> Iterator[tuple[str, str]]:
    """(name, kind) for every long flag and MCA parameter in a piece of code."""
    for match in _FLAG.finditer(code):
        flag = match.group(1).rstrip("-_")
        if len(flag) > 3:
            yield flag, "flag"
    for match in _MCA.finditer(code):
        yield match.group(1), "mca"
    for match in _OMPI_ENV_MCA.finditer(code):
        yield match.group(1), "mca"


_HEREDOC = re.compile(r"<<-?\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)")
SCRIPT_SUFFIXES = (".py", ".sh")


class ShellLines:
    """Feeds the lines of one shell snippet in order and yields the commands each line starts.

    Keeps the state a line-by-line reader needs: a quote left open (a `python -c '...'` over several
    lines), a here-document body (skipped up to its delimiter), and a `\\` continuation (the next
    line holds arguments, not a command). A single scanning pass per line: linear time.
    """

    def __init__(self) -> None:
        self.quote = ""
        self.heredoc = ""
        self.continued = False

    def commands(self, line: str) -> list[str]:
        if self.heredoc:
            if line.strip() == self.heredoc:
                self.heredoc = ""
            return []
        segments, starts_command = self._segments(line)
        names = []
        for index, segment in enumerate(segments):
            if index == 0 and not starts_command:
                continue
            name = _first_command(segment)
            if name:
                names.append(name)
        heredoc = _HEREDOC.search(line)
        if heredoc and not self.quote:
            self.heredoc = heredoc.group(1)
        code = line.split(" #", 1)[0].rstrip()
        self.continued = code.endswith("\\") and not self.quote
        return names

    def _segments(self, line: str) -> tuple[list[str], bool]:
        """The pieces of `line` that each start a command, and whether the first one does."""
        starts_command = not self.quote and not self.continued
        if not self.quote and line.lstrip().startswith("#"):
            return [], False
        segments: list[str] = []
        start = 0
        i = 0
        n = len(line)
        while i < n:
            ch = line[i]
            if self.quote:
                if ch == self.quote:
                    self.quote = ""
                    if not segments and not starts_command:
                        start = i + 1  # the rest of a quoted argument from an earlier line ends here
                elif ch == "$" and self.quote == '"' and line.startswith("$(", i):
                    segments.append(line[start:i])
                    start = i + 2
                    i += 1
                i += 1
                continue
            if ch == "#" and (i == 0 or line[i - 1] in " \t"):
                break
            if line.startswith("${", i):  # a parameter expansion: ${x:-(default)} starts no command
                close = line.find("}", i)
                i = n if close == -1 else close + 1
                continue
            if line.startswith("$((", i):  # arithmetic expansion: $((count + 1)) starts no command
                close = line.find("))", i)
                i = n if close == -1 else close + 2
                continue
            if ch in "'\"":
                self.quote = ch
            elif ch in ";|&(`)":
                segments.append(line[start:i])
                start = i + 1
            i += 1
        segments.append(line[start:i])
        return segments, starts_command


def _first_command(segment: str) -> str:
    words = segment.split()
    k = 0
    while k < len(words):
        word = words[k]
        if _ASSIGNMENT.match(word):
            k += 1
            for quote in "'\"":
                if word.count(quote) % 2:  # a quoted value with spaces: skip to the word that closes it
                    while k < len(words) and quote not in words[k]:
                        k += 1
                    k += 1
            if word.count("{") > word.count("}"):  # ${x:-a default with spaces}: skip to its closing brace
                while k < len(words) and "}" not in words[k]:
                    k += 1
                k += 1
            continue
        if word in COMMAND_WRAPPERS:
            k += 1
            while k < len(words) and words[k].startswith("-"):
                k += 1
            if word in ("timeout", "watch") and k < len(words) and words[k][:1].isdigit():
                k += 1
            continue
        break
    if k >= len(words):
        return ""
    word = words[k].strip("\"'")
    if not word or word in SHELL_WORDS or word[0] in "$<@-{}>[\\~*=!":
        return ""
    name = word.rsplit("/", 1)[-1] if "/" in word else word
    if (
        not name
        or name.endswith(("()", "{") + SCRIPT_SUFFIXES)
        or not _COMMAND_NAME.match(name)
        or name[0].isdigit()
        or name in SHELL_WORDS
    ):
        return ""
    return name


def command_names(line: str) -> list[str]:
    """The commands one self-contained shell line starts."""
    return ShellLines().commands(line)


def _add(out: list[Occurrence], seen: set, name: str, kind: str, file: str, line: int, section: str = "") -> None:
    key = (name, kind, line)
    if key not in seen:
        seen.add(key)
        out.append(Occurrence(name, kind, file, line, section))


def markdown_names(text: str, file: str) -> list[Occurrence]:
    """Names in a case page: front matter and body. Env vars everywhere; flags in code (code spans,
    fenced blocks, front matter code spans); commands in shell fenced blocks."""
    out: list[Occurrence] = []
    seen: set = set()
    fence = ""
    language = ""
    shell = ShellLines()
    section = "front-matter"
    dashes = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if dashes < 2 and line.rstrip() == "---":
            dashes += 1
            section = "front-matter" if dashes < 2 else ""
        heading = _SECTION.match(line) if not fence else None
        if heading:
            section = heading.group(1)
        for name in env_names(line):
            _add(out, seen, name, "env", file, number, section)
        opened = _FENCE.match(line)
        if opened and not fence:
            fence, language = opened.group(1), opened.group(2).lower()
            shell = ShellLines()
            continue
        if opened and fence and line.strip() == fence:
            fence, language = "", ""
            continue
        if fence:
            for name, kind in flag_names(line):
                _add(out, seen, name, kind, file, number, section)
            if language in SHELL_LANGUAGES:
                for name in shell.commands(line):
                    _add(out, seen, name, "command", file, number, section)
            continue
        for span in _CODE_SPAN.finditer(line):
            for name, kind in flag_names(span.group(1)):
                _add(out, seen, name, kind, file, number, section)
    return out


def yaml_names(text: str, file: str, *, script: bool) -> list[Occurrence]:
    """Names in a YAML content file. Env vars on every line. In a script part (`script=True`) every line
    is code: flags anywhere, commands in `run:` values (one line or a `|` block). Elsewhere (tree,
    harmless entries) flags count only inside code spans."""
    out: list[Occurrence] = []
    seen: set = set()
    block_indent = -1  # indentation of the `run:` key whose block scalar we are in; -1: none
    shell = ShellLines()
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        for name in env_names(line):
            _add(out, seen, name, "env", file, number)
        code = line if script else " ".join(m.group(1) for m in _CODE_SPAN.finditer(line))
        for name, kind in flag_names(code):
            _add(out, seen, name, kind, file, number)
        if not script:
            continue
        indent = len(line) - len(line.lstrip())
        if block_indent >= 0:
            if stripped and indent <= block_indent:
                block_indent = -1
            else:
                for name in shell.commands(line):
                    _add(out, seen, name, "command", file, number)
                continue
        run = _RUN_KEY.match(line)
        if run:
            value = run.group(2).strip()
            if value in ("|", "|-", ">", ">-", "|+"):
                block_indent = len(run.group(1))
                shell = ShellLines()
            elif value:
                if value[0] in "'\"" and value[-1] == value[0]:
                    value = value[1:-1].replace("''", "'") if value[0] == "'" else value[1:-1]
                for name in command_names(value):
                    _add(out, seen, name, "command", file, number)
    return out


def content_files(content_dir: Path) -> Iterable[tuple[Path, str]]:
    """(path, type) for every content file whose names are checked: case, harmless, script, tree."""
    for path in sorted((content_dir / "cases").glob("*.md")):
        yield path, "case"
    for path in sorted((content_dir / "harmless").glob("*.yaml")):
        yield path, "harmless"
    for path in sorted((content_dir / "scripts").glob("*.yaml")):
        yield path, "script"
    for path in sorted((content_dir / "trees").glob("*.yaml")):
        yield path, "tree"


def file_names(path: Path, kind: str, shown: str) -> list[Occurrence]:
    text = path.read_text(encoding="utf-8")
    if kind == "case":
        return markdown_names(text, shown)
    return yaml_names(text, shown, script=(kind == "script"))


def content_names(content_dir: Path) -> list[Occurrence]:
    """Every name occurrence in content/, in file and line order."""
    base = content_dir.parent
    found: list[Occurrence] = []
    for path, kind in content_files(content_dir):
        found += file_names(path, kind, str(path.relative_to(base)))
    return found


def unknown_names(occurrences: Iterable[Occurrence], allowed: set[tuple[str, str]]) -> list[Occurrence]:
    """Occurrences whose (name, kind) is not in the allow-list."""
    return [o for o in occurrences if (o.name, o.kind) not in allowed and not (o.kind == "env" and (o.name, "symbol") in allowed)]

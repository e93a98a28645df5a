"""Stage 1 for NCCL: read every WARN/INFO/VERSION format string from NVIDIA/nccl's src/ at one tag per minor release.

Usage: .venv/bin/python tools/catalogue/harvest_nccl.py --mirror /work/.mirror/NVIDIA+nccl/repo
Writes content/catalogue/harvest/nccl.tsv. TRACE is left out: it is compiled only into debug builds.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import HARVEST_DIR, HarvestRow, c_format_argument, call_arguments, harvest_write, line_of, release_key  # noqa: E402

# One tag per minor release: the last patch of each 2.x minor from 2.4 on, plus the first stored 2.30 patch.
EXTRA_TAGS = ("v2.30.3-1",)
FIRST_MINOR = (2, 3)  # 2.3.7 too: old pastes still show its wording
SOURCE_SUFFIXES = (".cc", ".cu", ".cpp", ".c", ".h", ".hpp", ".cuh")

# macro → (severity, index of the format argument)
CALLS = {"WARN": ("WARN", 0), "INFO": ("INFO", 1), "INFO_LOC": ("INFO", 1), "INFO_LOC_FN": ("INFO", 4), "VERSION": ("VERSION", 0)}
CALL_RE = re.compile(r"\b(WARN|INFO|INFO_LOC|INFO_LOC_FN|VERSION)\s*\(")
# The version banner is a macro of literals and STR(number) pieces: numbers print as %d, the suffix as %s.
VERSION_DEFINE_RE = re.compile(r"#define\s+VERSION_STRING[ \t]+((?:\\\n|[^\n])*)")


def git(mirror: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", "-C", str(mirror), *args], input=data, capture_output=True, check=True).stdout


def release_tags(mirror: Path) -> list[str]:
    """The last v2.<minor>.<patch>-<n> tag of every minor from FIRST_MINOR on, plus EXTRA_TAGS."""
    best: dict[tuple[int, int], tuple[tuple[int, ...], str]] = {}
    for tag in git(mirror, "tag").decode().split():
        m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)-(\d+)", tag)
        if not m:
            continue
        key = tuple(int(x) for x in m.groups())
        minor = key[:2]
        if minor < FIRST_MINOR:
            continue
        if minor not in best or best[minor][0] < key:
            best[minor] = (key, tag)
    tags = {tag for _, tag in best.values()} | set(EXTRA_TAGS)
    return sorted(tags, key=release_key)


def tag_release(tag: str) -> str:
    return re.fullmatch(r"v(\d+\.\d+\.\d+)-\d+", tag).group(1)


def files_at(mirror: Path, tag: str) -> dict[str, str]:
    names = [
        n
        for n in git(mirror, "ls-tree", "-r", "--name-only", tag, "--", "src").decode().splitlines()
        if n.endswith(SOURCE_SUFFIXES)
    ]
    batch = git(mirror, "cat-file", "--batch", data="".join(f"{tag}:{n}\n" for n in names).encode())
    out: dict[str, str] = {}
    pos = 0
    for name in names:
        header_end = batch.index(b"\n", pos)
        size = int(batch[pos:header_end].split()[2])
        out[name] = batch[header_end + 1 : header_end + 1 + size].decode("utf-8", "replace")
        pos = header_end + 1 + size + 1
    return out


def version_macros(text: str) -> str | None:
    m = VERSION_DEFINE_RE.search(text)
    if not m:
        return None
    body = re.sub(r"\bSTR\(\s*\w+\s*\)", '"%d"', m.group(1))
    body = body.replace("NCCL_SUFFIX", '"%s"')
    return c_format_argument(body.replace("\\\n", " "))


def macro_parameters(text: str, index: int) -> list[str]:
    """The parameters of the #define whose body holds `index` (lines joined by backslashes); [] outside one."""
    start = text.rfind("\n", 0, index) + 1
    while start > 1 and text[start - 2] == "\\":
        start = text.rfind("\n", 0, start - 1) + 1
    m = re.match(r"\s*#\s*define\s+\w+\(([^)]*)\)", text[start:index])
    return [p.strip() for p in m.group(1).split(",") if p.strip() and p.strip() != "..."] if m else []


# Calls that write a C string into a buffer: at its start when the destination is the buffer itself
# (sprintf(buf, …), snprintf(buf, size, …), strcpy/strncpy(buf, src…)), appending when it is an offset into it
# (sprintf(buf+strlen(buf), …), snprintf(4+line+4*j, …)) or the call is strcat/strncat.
BUFFER_WRITE_RE = re.compile(r"\b(sprintf|snprintf|strcpy|strncpy|strcat|strncat)\s*\(")
FUNCTION_HEAD_RE = re.compile(r"\b(\w+)\s*\(([^()]*)\)\s*(?:const\s*)?\{")
NOT_FUNCTIONS = {"if", "for", "while", "switch", "catch", "sizeof", "return"}
COMMENT_OR_STRING_RE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"', re.S)


def without_comments(text: str) -> str:
    """The text with every comment blanked to spaces (newlines kept), so indexes still point where they did."""
    return COMMENT_OR_STRING_RE.sub(lambda m: m.group(0) if m.group(0)[0] == '"' else re.sub(r"[^\n]", " ", m.group(0)), text)


def function_at(text: str, index: int) -> tuple[int, str, list[str]] | None:
    """(start, name, parameter names) of the top-level function whose body holds `index` (NCCL closes one at column 0)."""
    start = text.rfind("\n}", 0, index) + 1
    for m in FUNCTION_HEAD_RE.finditer(text, start, index):
        if m.group(1) not in NOT_FUNCTIONS:
            names = [re.findall(r"\w+", p)[-1] for p in m.group(2).split(",") if re.findall(r"\w+", p)]
            return m.start(), m.group(1), names
    return None


def buffer_head(text: str, start: int, index: int, buffer: str) -> tuple[str, bool] | None:
    """What `buffer` holds at `index`: (its constant head, whether more was appended after it), from the last write
    at its start between `start` and `index`. The head is a format, or NUL + a parameter's name when copied from one."""
    head: str | None = None
    appended = False
    for m in BUFFER_WRITE_RE.finditer(text, start, index):
        parsed = call_arguments(text, m.end() - 1)
        if parsed is None or not re.search(r"\b" + re.escape(buffer) + r"\b", parsed[0][0]):
            continue
        if parsed[0][0].strip() != buffer or m.group(1) in ("strcat", "strncat"):
            appended = True
            continue
        args = parsed[0][2:] if m.group(1) == "snprintf" else parsed[0][1:]
        if not args:
            continue
        source = args[0].strip()
        fmt = c_format_argument(source)
        if m.group(1) in ("strcpy", "strncpy") or fmt == "%s":
            value = source if m.group(1) in ("strcpy", "strncpy") else args[1].strip() if len(args) > 1 else ""
            head = "\0" + value if re.fullmatch(r"\w+", value) else None
        else:
            head = fmt
        appended = False
    return None if head is None else (head, appended)


def computed_formats(text: str, call: int, buffer: str) -> list[str]:
    """The formats of a `"%s", buffer` call whose buffer sprintf builds: the constant head written first, then a %s
    field for what a loop appended. When the head is copied from a parameter of a helper (NCCL's dumpLine), each
    call of that helper in the file gives one, from the buffer its caller passed."""
    function = function_at(text, call)
    if function is None:
        return []
    start, name, parameters = function
    found = buffer_head(text, start, call, buffer)
    if found is None:
        return []
    head, appended = found
    tail = "%s" if appended else ""
    if not head.startswith("\0"):
        return [head + tail]
    if head[1:] not in parameters:
        return []
    position = parameters.index(head[1:])
    formats = []
    for m in re.finditer(r"\b" + re.escape(name) + r"\s*\(", text):
        if m.start() == start or text.rfind("\n", 0, m.start()) + 1 == m.start():
            continue  # the definition, or a declaration at column 0
        parsed = call_arguments(text, m.end() - 1)
        caller = function_at(text, m.start())
        if parsed is None or caller is None or len(parsed[0]) <= position:
            continue
        passed = parsed[0][position].strip()
        outer = buffer_head(text, caller[0], m.start(), passed) if re.fullmatch(r"\w+", passed) else None
        if outer and not outer[0].startswith("\0"):
            formats.append(outer[0] + ("%s" if outer[1] or appended else ""))
    return formats


def harvest_file(release: str, tag: str, name: str, text: str) -> list[HarvestRow]:
    rows = []
    code: str | None = None  # the text without comments, made when a computed format needs it
    for m in CALL_RE.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if re.match(r"\s*#\s*define\b", text[line_start : m.start()]):
            continue  # the macro's own definition
        severity, index = CALLS[m.group(1)]
        parsed = call_arguments(text, m.end() - 1)
        if parsed is None or len(parsed[0]) <= index:
            continue
        argument = parsed[0][index]
        # Inside a macro, a parameter spliced into the format ("Call to " name, or #call) prints its text: a %s field.
        parameters = macro_parameters(text, m.start())
        if parameters:
            pattern = re.compile(r"#?\s*\b(?:" + "|".join(map(re.escape, parameters)) + r")\b")
            parts = re.split(r'("(?:[^"\\\n]|\\.)*")', argument)  # literals at odd indexes stay as they are
            argument = "".join(part if i % 2 else pattern.sub(' "%s" ', part) for i, part in enumerate(parts))
        fmt = c_format_argument(argument)
        if fmt is None:
            continue
        formats = [fmt]
        if fmt == "%s" and len(parsed[0]) > index + 1 and re.fullmatch(r"\s*\w+\s*", parsed[0][index + 1]):
            code = code if code is not None else without_comments(text)
            formats = computed_formats(code, m.start(), parsed[0][index + 1].strip()) or formats
        for fmt in formats:
            rows.append(HarvestRow(release, name, line_of(text, m.start()), severity, "printf", tag, fmt))
    banner = version_macros(text)
    if banner:
        rows.append(HarvestRow(release, name, line_of(text, text.index("VERSION_STRING")), "VERSION", "printf", tag, banner))
    return rows


def tags_harvest(mirror: Path, releases: dict[str, str], out: Path) -> None:
    """Read src/ at each tag (tag -> the release it is) as NCCL's is read, and write the harvest TSV."""
    rows: list[HarvestRow] = []
    for tag, release in releases.items():
        for name, text in files_at(mirror, tag).items():
            rows.extend(harvest_file(release, tag, name, text))
        print(tag, len(rows), file=sys.stderr)
    harvest_write(out, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mirror", type=Path, required=True, help="git directory of an NVIDIA/nccl mirror")
    parser.add_argument("--out", type=Path, default=HARVEST_DIR / "nccl.tsv")
    args = parser.parse_args()
    tags_harvest(args.mirror, {tag: tag_release(tag) for tag in release_tags(args.mirror)}, args.out)


if __name__ == "__main__":
    main()

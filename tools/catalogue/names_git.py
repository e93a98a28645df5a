"""Shared helpers of the tag-based names harvesters (names_nccl, names_transformer_engine, names_deepspeed,
names_accelerate): list release tags, read files at a tag, read argparse flags. Why shared: the four read git
mirrors the same way, and the rules that differ stay in their own files."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

from common import git as git_bytes
from packaging.version import InvalidVersion, Version


def git(repo: str, *args: str) -> str:
    return git_bytes(repo, *args).decode()


def last_patch_tags(repo: str, first: str, last: str) -> list[str]:
    """The last final (not pre-release) tag of each major.minor from `first` to `last` (both major.minor)."""
    best: dict[tuple[int, int], tuple[Version, str]] = {}
    for tag in git(repo, "tag").split():
        try:
            version = Version(re.sub(r"^v", "", tag))
        except InvalidVersion:
            continue
        minor = version.release[:2] if len(version.release) > 1 else (version.release[0], 0)
        if version.is_prerelease or not Version(first) <= Version(f"{minor[0]}.{minor[1]}") <= Version(last):
            continue
        if minor not in best or version > best[minor][0]:
            best[minor] = (version, tag)
    return [best[m][1] for m in sorted(best)]


def show(repo: str, tag: str, path: str) -> str | None:
    """The file at a tag, or None where the tag does not have it."""
    done = subprocess.run(["git", "-C", repo, "show", f"{tag}:{path}"], capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else None


def launcher_flags(repo: str, path: str, first: str, last: str, program: str) -> list:
    """Harvest rows of every long flag the argparse parser at `path` accepts, in the last patch of each minor release
    from `first` to `last` (names_deepspeed, names_accelerate)."""
    from kb.content.names_catalogue import HarvestRow

    rows = []
    for tag in last_patch_tags(repo, first, last):
        text = show(repo, tag, path)
        flags = add_argument_flags(text) if text else []
        print(f"{program} {tag}: {len(set(flags))} flags", file=sys.stderr)
        rows += [HarvestRow(tag.lstrip("v"), "flag", flag, path, "") for flag in flags]
    return rows


def add_argument_flags(text: str) -> list[str]:
    """Every long option string of every `add_argument(...)` call: the flags an argparse parser accepts."""
    flags = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("--"):
                    flags.append(arg.value)
    return flags

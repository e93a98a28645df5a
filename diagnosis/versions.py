"""Version ranges as data: PEP 440 specifiers ('>=2.2,<2.14') checked against versions read from a log.

Release names are reduced to their numbers first, so 'core_v0.17.0', '2.5.1+cu121', 'v2.21.5-1' and
'2.30.7' all compare as plain versions.
"""

from __future__ import annotations

import functools
import re

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

_NUMBERS_RE = re.compile(r"(\d+(?:\.\d+){0,3})")


def version_parse(text: str) -> Version | None:
    """The numeric part of a release name as a Version, or None when it has none."""
    match = _NUMBERS_RE.search(str(text))
    if not match:
        return None
    try:
        return Version(match.group(1))
    except InvalidVersion:  # pragma: no cover - the regex only admits dotted numbers
        return None


@functools.lru_cache(maxsize=512)
def _spec(text: str) -> SpecifierSet:
    return SpecifierSet(text.replace(" ", ""))


def version_spec_valid(text: str) -> bool:
    try:
        _spec(text)
    except InvalidSpecifier:
        return False
    return bool(text.strip())


def version_in(version: str | Version, spec: str) -> bool:
    """Whether a release satisfies a specifier set; pre-releases count as their release."""
    parsed = version if isinstance(version, Version) else version_parse(version)
    if parsed is None:
        return False
    return _spec(spec).contains(Version(parsed.base_version), prereleases=True)


# The release lines a range read from wording is checked against (minor releases, first and a late patch).
RELEASE_LINES = {
    "pytorch": tuple(
        f"{major}.{minor}.{patch}"
        for major, minors in ((1, range(13, 14)), (2, range(0, 16)))
        for minor in minors
        for patch in (0, 9)
    ),
    "nccl": tuple(f"2.{minor}.{patch}" for minor in range(18, 31) for patch in (0, 9)),
}


def versions_overlap(software: str, specs: list[str]) -> bool:
    """Whether some release of `software` satisfies every specifier set at once (a range read from a log's
    wording and a fix step's range). True when no release line is known to test against."""
    releases = RELEASE_LINES.get(software)
    if not releases:
        return True
    return any(all(version_in(release, spec) for spec in specs) for release in releases)


def versions_text(versions: dict[str, str]) -> str:
    """`{pytorch: '<2.14'}` as a reader sees it: 'PyTorch < 2.14'."""
    return " · ".join(
        f"{SOFTWARE_NAMES.get(name, name)} {spec.replace(',', ', ')}".replace(">=", "≥ ")
        .replace("<=", "≤ ")
        .replace("==", "= ")
        .replace("<", "< ")
        .replace(">", "> ")
        .replace("  ", " ")
        for name, spec in versions.items()
    )


SOFTWARE_NAMES = {
    "pytorch": "PyTorch",
    "nccl": "NCCL",
    "cuda": "CUDA",
    "megatron-lm": "Megatron-LM (core)",
    "transformer-engine": "TransformerEngine",
    "deepspeed": "DeepSpeed",
    "accelerate": "accelerate",
    "transformers": "transformers",
    "trl": "TRL",
    "huggingface-hub": "huggingface_hub",
    "autotrain-advanced": "AutoTrain",
    "open-mpi": "Open MPI",
    "linux-kernel": "Linux",
    "nvidia-driver": "NVIDIA driver",
}

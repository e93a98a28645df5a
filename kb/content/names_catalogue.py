"""The names catalogue: which release of a program reads which environment variable or flag (issue 32).

Two stages so that CI can check the catalogue without the sources. Stage 1 (tools/catalogue/names_<program>.py) reads
release wheels or tags and writes raw rows to content/catalogue/names/harvest/<program>.tsv. Stage 2 (`build`, here,
pure and deterministic) turns a harvest into content/catalogue/names/<program>.yaml; tests/kb/content/test_names_catalogue.py
rebuilds it byte for byte. kb/content/ranges.py checks content against the YAML.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml
from packaging.version import Version

CATALOGUE_DIR = Path(__file__).resolve().parents[2] / "content" / "catalogue" / "names"
HEADER = ("release", "kind", "name", "file", "alias_of")


@dataclass(frozen=True, order=True)
class HarvestRow:
    """One fact read from one release: `name` (kind env or flag) is read in `file`; `alias_of` is the current name
    when the source lists `name` as a deprecated alias of it in that release, else empty."""

    release: str
    kind: str
    name: str
    file: str
    alias_of: str = ""


def release_key(release: str) -> Version:
    """Sort key of a release as harvested (tags such as v2.19.3-1 or v0.8 are read as 2.19.3 and 0.8)."""
    return Version(re.sub(r"^v|-\d+$", "", release))


def write_harvest(path: Path, rows: list[HarvestRow], program: str) -> None:
    """Sorted, deduplicated TSV; the `# releases:` line lists every release harvested, in release order."""
    unique = sorted(set(rows), key=lambda r: (release_key(r.release), r.kind, r.name, r.file, r.alias_of))
    releases = sorted({r.release for r in unique}, key=release_key)
    lines = [f"# {program} names harvest (stage 1); see tools/catalogue/names_README.md", "# releases: " + " ".join(releases)]
    lines.append("\t".join(HEADER))
    lines += ["\t".join((r.release, r.kind, r.name, r.file, r.alias_of)) for r in unique]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def read_harvest(path: Path) -> list[HarvestRow]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or line == "\t".join(HEADER):
            continue
        rows.append(HarvestRow(*line.split("\t")))
    return rows


def harvested_releases(path: Path) -> list[str]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# releases: "):
            return line.split(": ", 1)[1].split()
    raise ValueError(f"{path}: no '# releases:' line")


_FILE_RANK = {".py": 0, ".hpp": 1, ".h": 1, ".cc": 1, ".cpp": 1, ".cu": 1}


def _file_rank(file: str) -> tuple[int, str]:
    """The file shown for a name: source (Python, C++) before a compiled library, then by path."""
    return (_FILE_RANK.get(Path(file).suffix, 2), file)


def build(harvest: Path, program: str, source: str) -> str:
    """Stage 2: the catalogue YAML text for one program, from its harvest. Pure: same harvest, same bytes."""
    releases = harvested_releases(harvest)
    order = {r: i for i, r in enumerate(releases)}
    rows = read_harvest(harvest)
    reads: dict[tuple[str, str], set[str]] = {}
    files: dict[tuple[str, str, str], list[str]] = {}
    aliases: dict[tuple[str, str], dict[str, str]] = {}
    alias_files: dict[tuple[str, str, str], list[str]] = {}
    for row in rows:
        key = (row.kind, row.name)
        reads.setdefault(key, set()).add(row.release)
        files.setdefault((row.kind, row.name, row.release), []).append(row.file)
        if row.alias_of:
            alias_files.setdefault((row.kind, row.name, row.release), []).append(row.file)
            aliases.setdefault(key, {})
            current = aliases[key].get(row.release)
            aliases[key][row.release] = min(current, row.alias_of) if current else row.alias_of
    entries = []
    for kind, name in sorted(reads, key=lambda k: (k[1], k[0])):
        read_in = sorted(reads[(kind, name)], key=order.__getitem__)
        first, last = read_in[0], read_in[-1]
        entry: dict = {"name": name, "kind": kind, "first": first, "last": last}
        gaps = [r for r in releases[order[first] : order[last] + 1] if r not in reads[(kind, name)]]
        if gaps:
            entry["not_read_in"] = gaps
        entry["file"] = min(files[(kind, name, first)], key=_file_rank)
        if (kind, name) in aliases:
            by_release = aliases[(kind, name)]
            latest = max(by_release, key=order.__getitem__)
            replaced_by = by_release[latest]
            since = min((r for r, new in by_release.items() if new == replaced_by), key=order.__getitem__)
            where = min(alias_files[(kind, name, since)], key=_file_rank)
            entry["deprecated"] = {"replaced_by": replaced_by, "from": since, "file": where}
        entries.append(entry)
    document = {
        "program": program,
        "generated_from": f"content/catalogue/names/harvest/{harvest.name} by kb/content/names_catalogue.py (stage 2)",
        "source": source,
        "releases": releases,
    }
    header = "# Generated: do not edit. Rebuild with tools/catalogue/names_build.py; see tools/catalogue/names_README.md.\n"
    text = header + yaml.safe_dump(document, sort_keys=False, default_flow_style=None, width=120, allow_unicode=True)
    # One line per name (a flow mapping), so a diff of two harvests shows one line per changed name.
    lines = [f"- {yaml.safe_dump(e, sort_keys=False, default_flow_style=True, width=10**6).strip()}" for e in entries]
    return text + "names:\n" + "".join(line + "\n" for line in lines)


# program -> (software name in content, kinds catalogued, source description)
PROGRAMS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "torch": (
        "pytorch",
        ("env", "flag"),
        "PyPI torch wheels (macOS arm64: Python sources, c10d headers, dylib literals; manylinux x86_64: "
        "libtorch_cuda.so / libtorch_cpu.so literals); torchrun flags from torch/distributed/run.py add_argument",
    ),
    "nccl": ("nccl", ("env",), "github.com/NVIDIA/nccl tags: NCCL_PARAM, ncclGetEnv, getenv in src/"),
    "transformer-engine": (
        "transformer-engine",
        ("env",),
        "github.com/NVIDIA/TransformerEngine tags: os.getenv / os.environ reads and getenv / getenv<T> in C++",
    ),
    "deepspeed": ("deepspeed", ("flag",), "github.com/deepspeedai/DeepSpeed tags: deepspeed/launcher/runner.py add_argument"),
    "accelerate": (
        "accelerate",
        ("flag",),
        "github.com/huggingface/accelerate tags: src/accelerate/commands/launch.py add_argument",
    ),
}


@dataclass(frozen=True)
class CatalogueEntry:
    name: str
    kind: str
    first: str
    last: str
    file: str
    not_read_in: tuple[str, ...] = ()
    replaced_by: str = ""
    deprecated_from: str = ""
    deprecated_file: str = ""  # where the release `deprecated_from` lists it as an alias


@dataclass(frozen=True)
class Catalogue:
    program: str
    software: str
    kinds: tuple[str, ...]
    releases: tuple[str, ...]
    entries: dict[tuple[str, str], CatalogueEntry]

    def read_in(self, entry: CatalogueEntry) -> list[str]:
        """Every harvested release that reads the name."""
        span = self.releases[self.releases.index(entry.first) : self.releases.index(entry.last) + 1]
        return [r for r in span if r not in entry.not_read_in]


# libyaml: 0.2 s for the five catalogues, about 1 s with the Python loader.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(directory: Path = CATALOGUE_DIR) -> dict[str, Catalogue]:
    """Every committed catalogue, by content software name (pytorch, nccl...)."""
    out = {}
    for program, (software, kinds, _) in PROGRAMS.items():
        path = directory / f"{program}.yaml"
        if not path.exists():
            continue
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
        entries = {}
        for e in data["names"]:
            dep = e.get("deprecated") or {}
            entries[(e["kind"], e["name"])] = CatalogueEntry(
                e["name"], e["kind"], str(e["first"]), str(e["last"]), e["file"], tuple(map(str, e.get("not_read_in", ()))),
                dep.get("replaced_by", ""), str(dep.get("from", "")), dep.get("file", ""),
            )  # fmt: skip
        out[software] = Catalogue(program, software, kinds, tuple(map(str, data["releases"])), entries)
    return out

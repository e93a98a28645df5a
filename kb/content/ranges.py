"""Check the release ranges the content gives for names against the names catalogue (issue 32).

Pure: no Django. tests/kb/content/test_content_ranges.py runs `range_problems` on the real content and fails with every
problem as `file:line: message`. The catalogue (content/catalogue/names/<program>.yaml, kb/content/names_catalogue.py)
says, for each harvested release of a program, which environment variables and flags it reads.

Agreement, precisely. H is the list of harvested releases of the program, R the subset that reads the name. A
`versions` text agrees with the catalogue when the PEP 440 specifier it starts with (the text before " (", or
"any" for every release) contains every release of R and no release of H outside R. Releases that were not
harvested are not judged. The checks:

1. names.yaml: an entry whose software lists a catalogued program, with a catalogued kind (pytorch: env, flag;
   nccl and transformer-engine: env; deepspeed and accelerate: flag), must be read by some harvested release. Its
   `versions` must agree with the catalogue of its FIRST catalogued software (a list names several readers; the
   range is the first one's); for the others, being read is enough. `deprecated: true` / `replaced_by` must match
   the catalogue's deprecation in the last harvested release that reads the name, and a name the catalogue marks
   deprecated must say so. `exists: false` must not be read by any harvested release.
2. Badges: a harmless entry's or a signature's `versions: {software: spec}` says when its message is printed, so
   every catalogued name of that software in the message (harmless: title and pattern; signature: pattern; both:
   examples) must be read by every harvested release the spec contains. An example with `release: "PyTorch X.Y.Z"`
   (or NCCL, TransformerEngine...) must name only variables that X.Y.Z reads, when X.Y.Z was harvested. A fix
   step's `versions` badge: every catalogued name in its #fix-N section must be read by at least one harvested
   release the badge contains (the text may name an older or newer name for part of the range).
3. Scripts (issue 32 item 4): every PyTorch variable a script part exports is rendered by the composer
   (troubleshooter/scripts.py, the same `_settings` lines fix.sh gets) for each torch answer it applies to; the
   `release_at_least` branches of those lines are evaluated for each harvested release of that answer's range, and
   the name exported there must be read by that release and not be a deprecated alias in it. Names of other
   catalogued programs that scripts export or read (parts and troubleshooter/script_skeleton/*.sh) must be read by
   some harvested release of the program.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from kb.content.frontmatter import front_matter_split
from kb.content.names import env_names, flag_names
from kb.content.names_catalogue import Catalogue, CatalogueEntry, release_key
from kb.content.yamllines import YamlDocument, yaml_file_read

# A release badge on an example: "PyTorch 2.4.1 (ProcessGroupNCCL.cpp)" -> (software, release).
# content's software name -> the message catalogue's program (content/catalogue/messages), for the range checks
MESSAGE_PROGRAMS = {"pytorch": "torch", "nccl": "nccl", "deepspeed": "deepspeed"}
BADGE_SOFTWARE = {"pytorch": "pytorch", "nccl": "nccl", "transformerengine": "transformer-engine", "deepspeed": "deepspeed"}
_BADGE = re.compile(r"^\s*(PyTorch|NCCL|TransformerEngine|DeepSpeed)\s+v?(\d+\.\d+(?:\.\d+)*)\b")
# The torch answers of the troubleshooter (troubleshooter/roles.py) as release ranges.
TORCH_ANSWERS = {"lt-2.2": "<2.2", "2.2-2.4": ">=2.2,<2.5", "ge-2.5": ">=2.5"}


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


def spec_of(versions: str) -> SpecifierSet | None:
    """The specifier a `versions` text starts with ("any" is every release); None when it has none."""
    head = str(versions).split(" (", 1)[0].strip()
    if head.lower() == "any":
        return SpecifierSet("")
    try:
        return SpecifierSet(head.replace(" ", ""))
    except InvalidSpecifier:
        return None


def contains(spec: SpecifierSet, release: str) -> bool:
    return spec.contains(release_key(release), prereleases=True)


def describe(catalogue: Catalogue, entry: CatalogueEntry) -> str:
    """`2.2.2–2.14.1 (file)`, with the releases between that do not read it."""
    span = entry.first if entry.first == entry.last else f"{entry.first}–{entry.last}"
    gaps = f" except {', '.join(entry.not_read_in)}" if entry.not_read_in else ""
    return f"{span}{gaps} ({entry.file})"


def disagreement(catalogue: Catalogue, entry: CatalogueEntry, spec: SpecifierSet, text: str) -> str:
    """Why `spec` disagrees with the catalogue ('' when it agrees): the releases it wrongly includes or excludes."""
    read = set(catalogue.read_in(entry))
    included = [r for r in catalogue.releases if contains(spec, r) and r not in read]
    excluded = [r for r in catalogue.releases if not contains(spec, r) and r in read]
    why = []
    if excluded:
        why.append(f"'{text}' excludes {few_releases(excluded)}, which read{'s' if len(excluded) == 1 else ''} it")
    if included:
        why.append(f"'{text}' includes {few_releases(included)}, which do{'es' if len(included) == 1 else ''} not read it")
    return "; ".join(why)


def few_releases(releases: list[str]) -> str:
    return (
        ", ".join(releases) if len(releases) <= 4 else f"{releases[0]}, {releases[1]} … {releases[-1]} ({len(releases)} releases)"
    )


def _softwares(entry: dict) -> list[str]:
    software = entry.get("software")
    return [str(s) for s in software] if isinstance(software, list) else [str(software)]


def names_file_problems(doc: YamlDocument, catalogues: dict[str, Catalogue]) -> list[Problem]:
    """Check 1: names.yaml against the catalogues."""
    problems = []
    for index, entry in enumerate(doc.data["names"]):
        name, kind = entry["name"], entry["kind"]
        readers = [catalogues[s] for s in _softwares(entry) if s in catalogues and kind in catalogues[s].kinds]
        line = doc.line_of(("names", index, "versions"))

        def problem(message: str, at: int = line) -> None:
            problems.append(Problem(doc.path, at, f"{name} {message}"))

        if not readers:
            continue
        if entry.get("exists", True) is False:
            for catalogue in readers:
                if (kind, name) in catalogue.entries:
                    found = catalogue.entries[(kind, name)]
                    problem(
                        f"is marked exists: false but the {catalogue.program} catalogue says read in {describe(catalogue, found)}"
                    )
            continue
        for position, catalogue in enumerate(readers):
            found = catalogue.entries.get((kind, name))
            if found is None:
                harvested = f"{catalogue.releases[0]}–{catalogue.releases[-1]}"
                problem(f"({kind}) is not read by any harvested {catalogue.program} release ({harvested})")
                continue
            if position == 0:
                spec = spec_of(entry["versions"])
                if spec is None:
                    problem(f"versions '{entry['versions']}' does not start with a PEP 440 specifier or 'any'")
                else:
                    text = str(entry["versions"]).split(" (", 1)[0].strip()
                    why = disagreement(catalogue, found, spec, text)
                    if why:
                        problem(f"versions '{text}' but the catalogue says read in {describe(catalogue, found)}: {why}")
            problems += _deprecation_problems(doc, index, entry, catalogue, found)
    return problems


def _deprecation_problems(
    doc: YamlDocument, index: int, entry: dict, catalogue: Catalogue, found: CatalogueEntry
) -> list[Problem]:
    name = entry["name"]
    at = doc.line_of(("names", index, "deprecated")) if entry.get("deprecated") else doc.line_of(("names", index, "name"))
    if found.replaced_by and not entry.get("deprecated"):
        message = (
            f"is not marked deprecated, but the catalogue says it is a deprecated alias of {found.replaced_by} "
            f"from {found.deprecated_from} ({found.deprecated_file})"
        )
        return [Problem(doc.path, at, f"{name} {message}")]
    if entry.get("deprecated") and not found.replaced_by:
        message = f"is marked deprecated, but no harvested {catalogue.program} release lists it as an alias of another name"
        return [Problem(doc.path, at, f"{name} {message}")]
    if entry.get("deprecated") and entry.get("replaced_by") != found.replaced_by:
        message = f"replaced_by {entry.get('replaced_by')} but the catalogue says replaced by {found.replaced_by} from {found.deprecated_from}"
        return [Problem(doc.path, at, f"{name} {message}")]
    return []


@dataclass(frozen=True)
class NameOwners:
    """Which software reads each name, from names.yaml: decides which catalogue judges a name in content."""

    owners: dict[str, tuple[str, ...]]

    @classmethod
    def from_names_file(cls, doc: YamlDocument) -> NameOwners:
        return cls({e["name"]: tuple(_softwares(e)) for e in doc.data["names"] if e["kind"] in ("env", "flag")})

    def owned(self, name: str, software: str) -> bool:
        return software in self.owners.get(name, ())


def _badge_check(
    shown: str, line: int, names: list[str], software: str, spec: SpecifierSet, text: str, catalogues, owners
) -> list[Problem]:
    catalogue = catalogues.get(software)
    if catalogue is None:
        return []
    problems = []
    for name in dict.fromkeys(names):
        if not owners.owned(name, software):
            continue
        found = catalogue.entries.get(("env", name))
        if found is None:
            problems.append(
                Problem(
                    shown,
                    line,
                    f"{name} is named under versions {{{software}: '{text}'}} but no harvested {catalogue.program} release reads it",
                )
            )
            continue
        read = set(catalogue.read_in(found))
        missing = [r for r in catalogue.releases if contains(spec, r) and r not in read]
        if missing:
            problems.append(
                Problem(
                    shown, line,
                    f"{name} versions {{{software}: '{text}'}} but the catalogue says read in {describe(catalogue, found)}: "
                    f"'{text}' includes {few_releases(missing)}, which do{'es' if len(missing) == 1 else ''} not read it",
                )
            )  # fmt: skip
    return problems


def _example_badge_check(shown: str, line: int, example, catalogues, owners) -> list[Problem]:
    if not isinstance(example, dict):
        return []
    match = _BADGE.match(str(example.get("release", "")))
    if not match:
        return []
    software = BADGE_SOFTWARE[match.group(1).lower()]
    catalogue = catalogues.get(software)
    release = match.group(2)
    if catalogue is None or release not in catalogue.releases:
        return []
    problems = []
    for name in dict.fromkeys(env_names(str(example.get("text", "")))):
        if not owners.owned(name, software):
            continue
        found = catalogue.entries.get(("env", name))
        if found is None or release not in catalogue.read_in(found):
            said = describe(catalogue, found) if found else "no harvested release"
            problems.append(
                Problem(shown, line, f"{name} in an example labelled {software} {release}, but the catalogue says read in {said}")
            )
    return problems


def _message_problems(
    shown: str, doc: YamlDocument, where: tuple, item: dict, texts: list[str], catalogues, owners
) -> list[Problem]:
    """Checks 2 for one harmless entry or signature: its versions badge and its examples' release badges."""
    problems = []
    names = [n for t in texts for n in env_names(str(t))]
    for k, example in enumerate(item.get("examples") or []):
        names += env_names(str(example.get("text", "") if isinstance(example, dict) else example))
        problems += _example_badge_check(shown, doc.line_of(where + ("examples", k)), example, catalogues, owners)
    for software, text in (item.get("versions") or {}).items():
        spec = spec_of(str(text))
        if spec is not None:
            line = doc.line_of(where + ("versions", software))
            problems += _badge_check(shown, line, names, str(software), spec, str(text), catalogues, owners)
    return problems


def badge_problems(content_dir: Path, catalogues: dict[str, Catalogue], owners: NameOwners) -> list[Problem]:
    """Check 2 over content/harmless/*.yaml and the signatures of content/cases/*.md."""
    base = content_dir.parent
    problems = []
    for path in sorted((content_dir / "harmless").glob("*.yaml")):
        doc = yaml_file_read(path, str(path.relative_to(base)))
        texts = [doc.data.get("title", ""), doc.data.get("pattern", "")]
        problems += _message_problems(doc.path, doc, (), doc.data, texts, catalogues, owners)
    for path in sorted((content_dir / "cases").glob("*.md")):
        fm = front_matter_split(path.read_text(encoding="utf-8"))
        fm.path = str(path.relative_to(base))
        for index, signature in enumerate(fm.data.get("signatures") or []):
            problems += _message_problems(
                fm.path, fm, ("signatures", index), signature, [signature.get("pattern", "")], catalogues, owners
            )
        problems += _step_problems(fm, catalogues, owners)
    return problems


_HEADING = re.compile(r"^(#{1,3})\s.*?\{#([a-z0-9-]+)\}\s*$")


def _step_problems(fm, catalogues: dict[str, Catalogue], owners: NameOwners) -> list[Problem]:
    """A fix step's `versions` badge: every catalogued name its #fix-N section names must be read by at least one
    harvested release the badge contains (a section may name an older or newer name for part of the range, so
    "every release" would be too strict; a name that no release in the badge reads is wrong for the whole step)."""
    badges = {s.get("anchor"): s.get("versions") or {} for s in fm.data.get("steps") or [] if s.get("versions")}
    if not badges:
        return []
    sections: dict[str, list[tuple[int, str]]] = {}
    current = ""
    fence = False
    for offset, line in enumerate(fm.body.splitlines()):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        heading = None if fence else _HEADING.match(line)
        if heading:
            current = heading.group(2) if heading.group(2) in badges else ""
            continue
        if current:
            sections.setdefault(current, []).extend((fm.body_line + offset, n) for n in env_names(line))
    problems = []
    for anchor, versions in badges.items():
        for software, text in versions.items():
            catalogue, spec = catalogues.get(str(software)), spec_of(str(text))
            if catalogue is None or spec is None:
                continue
            included = [r for r in catalogue.releases if contains(spec, r)]
            for line, name in dict.fromkeys(sections.get(anchor, [])):
                if not owners.owned(name, str(software)):
                    continue
                found = catalogue.entries.get(("env", name))
                if found is None or not set(catalogue.read_in(found)) & set(included):
                    said = describe(catalogue, found) if found else "no harvested release"
                    message = f"{name} in step {anchor} badged {{{software}: '{text}'}}, but the catalogue says read in {said}"
                    problems.append(Problem(fm.path, line, message))
    return problems


# Check 3: scripts.

_IF = re.compile(r"^\s*(if|elif)\s+(.*?);\s*then\s*$")
_AT_LEAST = re.compile(r'release_at_least\s+"\$\w+"\s+(\d+\.\d+)')
_EXPORT = re.compile(r"^\s*export\s+([A-Za-z_][A-Za-z0-9_]*)=")


def exported_by_release(lines: list[str], release: str) -> list[tuple[int, str]]:
    """(line index, name) of every `export NAME=` that runs for a known PyTorch `release` (MAJOR.MINOR.PATCH) in
    shell lines built of if/elif/else/fi whose tests are `release_at_least "$var" X.Y` or `[ -z "$var" ]` (the
    release is known, so that test is false); any other test is unknown and its branch is taken as not run."""
    taken: list[bool] = [True]  # whether the current branch runs
    done: list[bool] = []  # per open if: a branch of it has already run
    out = []
    minor = ".".join(release.split(".")[:2])
    for index, line in enumerate(lines):
        stripped = line.strip()
        head = _IF.match(line)
        if head:
            test = head.group(2)
            at_least = _AT_LEAST.search(test)
            value = Version(minor) >= Version(at_least.group(1)) if at_least else False
            if head.group(1) == "if":
                outer = taken[-1]
                done.append(False)
                taken.append(outer and value)
                done[-1] = value
            else:
                outer = taken[-2]
                taken[-1] = outer and not done[-1] and value
                done[-1] = done[-1] or value
            continue
        if stripped == "else":
            taken[-1] = taken[-2] and not done[-1]
            continue
        if stripped == "fi":
            taken.pop()
            done.pop()
            continue
        export = _EXPORT.match(line)
        if export and taken[-1]:
            out.append((index, export.group(1)))
    return out


def script_problems(content_dir: Path, skeleton_dir: Path, catalogues: dict[str, Catalogue], owners: NameOwners) -> list[Problem]:
    """Check 3: names the fix scripts export (per torch answer and release branch) or read."""
    from troubleshooter.scripts import _Export, _settings
    from troubleshooter.variables import VARIABLES, variable_name

    base = content_dir.parent
    torch = catalogues.get("pytorch")
    problems = []
    for path in sorted((content_dir / "scripts").glob("*.yaml")):
        doc = yaml_file_read(path, str(path.relative_to(base)))
        for part_id, part in (doc.data.get("parts") or {}).items():
            for index, setting in enumerate(part.get("env") or []):
                name = setting["name"]
                line = doc.line_of(("parts", part_id, "env", index, "name"))
                variable = VARIABLES.get(name)
                if torch is None or variable is None or not owners.owned(name, "pytorch"):
                    continue
                answers = (setting.get("only") or {}).get("torch") or list(TORCH_ANSWERS)
                for answer in answers:
                    exported = variable_name(variable, answer)
                    shell = _settings([_Export(exported, "1", "", variable.reader, False, variable.renamed)])
                    bad: dict[tuple[str, str], list[str]] = {}
                    for release in (r for r in torch.releases if contains(SpecifierSet(TORCH_ANSWERS[answer]), r)):
                        for _, sent in exported_by_release(shell, release):
                            why = _export_problem(sent, release, torch)
                            if why:
                                bad.setdefault((sent, why), []).append(release)
                    for (sent, why), releases in bad.items():
                        where = f"exported for PyTorch {few_releases(releases)} (torch answer {answer})"
                        problems.append(Problem(doc.path, line, f"{sent} {where}, but the catalogue says {why}"))
    problems += _read_names_problems(content_dir, skeleton_dir, catalogues, owners)
    return problems


def _export_problem(name: str, release: str, torch: Catalogue) -> str:
    """What the catalogue says against exporting `name` for `release` ('' when nothing)."""
    found = torch.entries.get(("env", name))
    if found is None or release not in torch.read_in(found):
        return f"read in {describe(torch, found) if found else 'no harvested release'}"
    if found.replaced_by and release_key(release) >= release_key(found.deprecated_from):
        return (
            f"it is a deprecated alias of {found.replaced_by} from {found.deprecated_from} ({found.deprecated_file}): "
            f"export {found.replaced_by} there"
        )
    return ""


def _read_names_problems(content_dir: Path, skeleton_dir: Path, catalogues, owners) -> list[Problem]:
    """Names in script parts' run lines and the skeleton: read by some harvested release of their program."""
    base = content_dir.parent
    files = sorted((content_dir / "scripts").glob("*.yaml")) + sorted(skeleton_dir.glob("*.sh"))
    problems = []
    for path in files:
        shown = str(path.relative_to(base)) if path.is_relative_to(base) else str(path)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            found = [(n, "env") for n in env_names(line)] + [(n, k) for n, k in flag_names(line) if k == "flag"]
            for name, kind in found:
                for software in owners.owners.get(name, ()):
                    catalogue = catalogues.get(software)
                    if catalogue and kind in catalogue.kinds and (kind, name) not in catalogue.entries:
                        problems.append(
                            Problem(
                                shown, number, f"{name} is in a fix script but no harvested {catalogue.program} release reads it"
                            )
                        )
    return problems


def range_problems(content_dir: Path, skeleton_dir: Path, catalogues: dict[str, Catalogue]) -> list[Problem]:
    """Every disagreement between the content's ranges and the catalogue, in file and line order."""
    names_doc = yaml_file_read(content_dir / "names.yaml", str((content_dir / "names.yaml").relative_to(content_dir.parent)))
    owners = NameOwners.from_names_file(names_doc)
    problems = names_file_problems(names_doc, catalogues)
    problems += badge_problems(content_dir, catalogues, owners)
    problems += script_problems(content_dir, skeleton_dir, catalogues, owners)
    return sorted(set(problems), key=lambda p: (p.file, p.line, p.message))

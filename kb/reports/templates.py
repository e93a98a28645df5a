"""Log lines to templates, clustered by Drain3 (the maintained Drain, He et al., ICWS 2017), in memory.

A line loses its launcher's rank prefix, is redacted, and its variable parts (numbers, hex, hosts,
addresses, paths, ranks) become typed placeholders; Drain3 groups the templates (same length, a
fixed-depth tree of leading tokens, then token similarity) and turns positions that differ into `<*>`.
Only templates and counts are ever kept: the clusters live in the database (kb/reports/store.py),
and Drain3's tree is rebuilt from them for each paste, so no Drain3 persistence is used.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import yaml
from drain3.drain import Drain

from diagnosis.text import REPAIR_LIMIT, paste_repair
from kb.reports.redact import mask_text, redact_text

if TYPE_CHECKING:
    from diagnosis.result import Result

WILDCARD = "<*>"
SIMILARITY = 0.5
MAX_TOKENS = 60
MAX_LINES_PER_PASTE = 40

# Placeholders, most specific first; each replaces a whole run of one kind of variable text.
_VARIABLES: list[tuple[re.Pattern, str]] = [
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b[EWIF]\d{3,4} \d\d:\d\d:\d\d(?:\.\d{1,9})?"), "<glog>"),
    (re.compile(r"\b\d\d:\d\d:\d\d(?:[.,]\d{1,9})?"), "<time>"),
    (re.compile(r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"(?i)\b0x[0-9a-f]{1,32}\b"), "<hex>"),
    (re.compile(r"(?i)\b[0-9a-f]{12,64}\b"), "<hex>"),
    (re.compile(r"(?<![\w/.-])(?:~|\.{1,2})?(?:/[\w.@+-]{1,80}){2,30}/?"), "<path>"),
    (re.compile(r"\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b"), "<num>"),
]
# What a launcher puts before each line (diagnosis/text.py names them): PyTorch's `[rank3]:` and torchrun's `[default3]:`,
# torchrun's `[3]<stderr>:`, mpirun --tag-output's `[1,3]<stderr>:`, srun --label's `3: `; removed, repeatedly, so one
# message from 8 ranks is one template. A rank glued to its word later in the line ("rank3", "default3") is a number too.
_PREFIX_RE = re.compile(
    r"^(?:\s*(?:\([\w.-]{1,80} pid=\d+(?:, ip=[\d.]+)?\) |\[(?:default|rank)\d{1,5}\]:|\[(?:\d{1,5},)?\d{1,5}\]<std(?:out|err)>:|(?:P\d{1,5} )? *\d{1,5}: ))+"
)
_GLUED_RANK_RE = re.compile(r"(?i)\b(rank|default|local_rank)\d{1,5}\b")
_TOKEN_RE = re.compile(r"\S+")
# Lines worth a curator's look: they say something went wrong.
INTERESTING_RE = re.compile(
    r"(?i)error|fail|timeout|timed out|abort|exception|fatal|killed|hang|stuck|"
    r"watchdog|terminat|traceback|segmentation|signal|refused|unreachable|denied|warn"
)
_PLACEHOLDER_RE = re.compile(r"<(?:host|ip|user|time|glog|uuid|hex|path|num|\*)>")


def line_template(line: str) -> str:
    """A line with secrets out and every variable part replaced by a typed placeholder."""
    text = _GLUED_RANK_RE.sub(r"\1<num>", _PREFIX_RE.sub("", line[:1000])).strip()
    text = mask_text(redact_text(text))
    for pattern, placeholder in _VARIABLES:
        text = pattern.sub(placeholder, text)
    tokens = _TOKEN_RE.findall(text)[:MAX_TOKENS]
    return " ".join(tokens)


def unexplained_templates(result: Result, limit: int = MAX_LINES_PER_PASTE, scan_chars: int = 4 * 1024 * 1024) -> list[str]:
    """Templates of the lines of a job's logs that report a problem and that nothing explained, one entry per line
    (a template repeats), at most `limit` distinct. The lines are the diagnosis's (a hard-wrapped line re-joined,
    as diagnosis/text.py repairs a paste), less every line that was evidence for a match (the triage guide's
    included) or known-harmless, and less every line whose template is one of theirs (a case's evidence lists a
    few of a message's lines, not all of them)."""
    if result.texts is None:
        return []
    diagnosis = result.diagnosis
    evidence = [(e.source, e.line, e.text) for m in diagnosis.matches for e in m.evidence]
    evidence += [(h.source, h.line, h.text) for h in diagnosis.harmless]
    explained_at = {(source, line) for source, line, _ in evidence}
    explained = {line_template(text.removesuffix("…")) for _, _, text in evidence}
    counts: dict[str, int] = {}
    out: list[str] = []
    for key, lines in result.texts.lines.items():
        for first, last, line in _repaired_lines("\n".join(lines)[:scan_chars]):
            if len(line) < 12 or not INTERESTING_RE.search(line):
                continue
            if any((key, n) in explained_at for n in range(first, last + 1)):
                continue
            template = line_template(line)
            if not template or template in explained or not _draftable(template):
                continue
            if template not in counts and len(counts) >= limit:
                continue
            counts[template] = counts.get(template, 0) + 1
            out.append(template)
    return out


def _repaired_lines(text: str) -> list[tuple[int, int, str]]:
    """(first input line, last input line, text) of each line as the diagnosis reads a paste: hard-wrapped lines
    re-joined, line numbers counting the input's lines (as evidence does)."""
    repaired = paste_repair(text) if len(text) <= REPAIR_LIMIT else None
    if repaired is None or not repaired.joins:
        return [(n, n, line) for n, line in enumerate(text.split("\n"), start=1)]
    out = []
    offset = 0
    for index, line in enumerate(repaired.text.split("\n")):
        end = offset + len(line)
        first = index + 1 + bisect.bisect_right(repaired.joins, offset)
        last = index + 1 + bisect.bisect_left(repaired.joins, end + 1)
        out.append((first, last, line))
        offset = end + 1
    return out


def _draftable(template: str) -> bool:
    """A draft needs a fixed piece of text of 3+ letters (the content validator asks every pattern for one)."""
    return not _only_placeholders(template) and re.search(r"[A-Za-z]{3}", _PLACEHOLDER_RE.sub(" ", template)) is not None


def _only_placeholders(template: str) -> bool:
    return not re.sub(r"[\W_]", "", _PLACEHOLDER_RE.sub("", template))


@dataclass
class Cluster:
    tokens: list[str]
    count: int = 1

    @property
    def template(self) -> str:
        return " ".join(self.tokens)


def drain() -> Drain:
    """Drain3's parse tree (He et al., ICWS 2017), in memory: no persistence handler, its default depth and
    similarity, `<*>` for what differs inside a cluster. tools/template_clustering.py measured it against the
    hand-written Drain this module held before, on the real pastes (the commit that adopted it has the numbers)."""
    return Drain(param_str=WILDCARD)


def cluster_lines(templates: list[str]) -> list[Cluster]:
    """In-memory clustering (store.templates_record does the same against the stored clusters), first seen first."""
    tree = drain()
    clusters: dict[int, Cluster] = {}
    for template in templates:
        cluster, _ = tree.add_log_message(template)
        if cluster.cluster_id in clusters:
            clusters[cluster.cluster_id].count += 1
        clusters.setdefault(cluster.cluster_id, Cluster([]))
        clusters[cluster.cluster_id].tokens = list(cluster.log_template_tokens)
    return list(clusters.values())


# What each placeholder stands for, as a bounded pattern (no two unbounded runs in a row, so a draft stays linear),
# and a sample of it for the draft's example line: the example must be a line the pattern matches (the content
# validator checks it), and a stored template holds no real value to show.
PLACEHOLDERS: dict[str, tuple[str, str]] = {
    "<time>": (r"(?:\d{4}-\d\d-\d\d[T ])?\d\d:\d\d:\d\d[.,\d]{0,10}(?:Z|[+-]\d\d:?\d\d)?", "2026-01-01 00:00:00.000"),
    "<glog>": (r"[EWIF]\d{3,4} \d\d:\d\d:\d\d[.\d]{0,10}", "E0101 00:00:00.000000"),
    "<uuid>": (r"[0-9a-fA-F-]{36}", "00000000-0000-0000-0000-000000000000"),
    "<hex>": (r"[0-9a-fA-Fx]{1,66}", "0x0"),
    "<path>": (r"[^\s]{1,2500}", "/path/to/file"),
    "<num>": (r"\d[\d.e+-]{0,30}", "0"),
    "<host>": (r"[^\s]{1,200}", "host"),
    "<ip>": (r"[^\s]{1,200}", "10.0.0.1"),
    "<user>": (r"[^\s]{1,200}", "user"),
    WILDCARD: (r"[^\s]{1,200}", "x"),
}
_PIECES_RE = re.compile("(" + "|".join(re.escape(p) for p in PLACEHOLDERS) + ")")
_UNBOUNDED = r"[^\s]{1,"


def draft_pattern(template: str) -> str:
    """A linear-time regex for a template: literal text escaped, each placeholder as what it stands for, tokens
    separated by runs of blanks. A token that is only open-ended placeholders becomes one run of non-blanks."""
    parts = []
    for token in template.split(" "):
        pieces = [p for p in _PIECES_RE.split(token) if p]
        out = []
        for piece in pieces:
            # A backslash as a class: an escaped one before `n` would read as `\n` to the content validator.
            regex = PLACEHOLDERS[piece][0] if piece in PLACEHOLDERS else re.escape(piece).replace("\\\\", "[\\\\]")
            if out and regex.startswith(_UNBOUNDED) and out[-1].startswith(_UNBOUNDED):
                continue  # two runs of non-blanks in a row are one
            out.append(regex)
        parts.append("".join(out))
    return r"\s+".join(parts)


def draft_example(template: str) -> str:
    """The template with a sample in place of each placeholder: a line its draft pattern matches."""
    return _PIECES_RE.sub(lambda m: PLACEHOLDERS[m.group(1)][1], template)


def draft_id(template: str) -> str:
    words = re.findall(r"[A-Za-z]{3,}", _PLACEHOLDER_RE.sub(" ", template))[:4]
    return "-".join(w.lower() for w in words) or "new-signature"


def draft_fields(template: str, example: str | None = None) -> dict:
    """The draft as a signature (content/FORMAT.md), the fields kb/content/schema.py checks. Its example is the
    cluster's first line (its template, samples in place of placeholders) where the pattern matches it, else the
    cluster's template so filled in."""
    pattern = draft_pattern(template)
    sample = draft_example(example) if example else ""
    if not sample or not re.search(pattern, sample):
        sample = draft_example(template)
    return {
        "id": draft_id(template),
        "description": "TODO say in words what this line means and which program prints it.",
        "pattern": pattern,
        "weight": 3,
        "anchor": False,
        "examples": [{"text": sample, "release": "TODO program and release whose source prints this"}],
    }


def draft_signature(template: str, example: str | None = None) -> str:
    """The front-matter block a curator pastes into a case's `signatures`, as YAML writes it (quoting included)."""
    text = yaml.safe_dump([draft_fields(template, example)], sort_keys=False, allow_unicode=True, width=10_000)
    return "".join("  " + line if line.strip() else line for line in text.splitlines(keepends=True))

"""Log lines to templates, clustered the way Drain does it (He et al., ICWS 2017), kept small.

A line is redacted, its variable parts (numbers, hex, hosts, addresses, paths, ranks) become typed
placeholders, and the tokens are compared with the clusters of the same length and the same first
token: above a similarity threshold the line joins the cluster and the positions that differ become
`<*>`. Only templates and counts are ever kept.

Drain3 (the maintained implementation) was considered: it keeps its state in its own persistence
objects and pulls in cachetools and jsonpickle; the part used here is about sixty lines and must write
to this site's database, so it lives here, with tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kb.reports.redact import mask_text, redact_text

WILDCARD = "<*>"
SIMILARITY = 0.5
MAX_TOKENS = 60
MAX_LINES_PER_PASTE = 40

# Placeholders, most specific first; each replaces a whole run of one kind of variable text.
_VARIABLES: list[tuple[re.Pattern, str]] = [
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b[EWIF]\d{4} \d\d:\d\d:\d\d(?:\.\d{1,9})?"), "<glog>"),
    (re.compile(r"\b\d\d:\d\d:\d\d(?:[.,]\d{1,9})?"), "<time>"),
    (re.compile(r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"(?i)\b0x[0-9a-f]{1,32}\b"), "<hex>"),
    (re.compile(r"(?i)\b[0-9a-f]{12,64}\b"), "<hex>"),
    (re.compile(r"(?<![\w/.-])(?:~|\.{1,2})?(?:/[\w.@+-]{1,80}){2,30}/?"), "<path>"),
    (re.compile(r"\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b"), "<num>"),
]
_TOKEN_RE = re.compile(r"\S+")
# Lines worth a curator's look: they say something went wrong.
INTERESTING_RE = re.compile(
    r"(?i)error|fail|timeout|timed out|abort|exception|fatal|killed|hang|stuck|"
    r"watchdog|terminat|traceback|segmentation|signal|refused|unreachable|denied|warn"
)
_PLACEHOLDER_RE = re.compile(r"<(?:host|ip|user|time|glog|uuid|hex|path|num|\*)>")


def line_template(line: str) -> str:
    """A line with secrets out and every variable part replaced by a typed placeholder."""
    text = mask_text(redact_text(line.strip()[:1000]))
    for pattern, placeholder in _VARIABLES:
        text = pattern.sub(placeholder, text)
    tokens = _TOKEN_RE.findall(text)[:MAX_TOKENS]
    return " ".join(tokens)


def interesting_templates(text: str, limit: int = MAX_LINES_PER_PASTE) -> list[str]:
    """Distinct templates of the lines of a paste that report a problem, in order, at most `limit`."""
    seen: dict[str, None] = {}
    for line in text.splitlines():
        if len(seen) >= limit:
            break
        if len(line) < 12 or not INTERESTING_RE.search(line):
            continue
        template = line_template(line)
        if template and template not in seen and not _only_placeholders(template):
            seen[template] = None
    return list(seen)


def _only_placeholders(template: str) -> bool:
    return not re.sub(r"[\W_]", "", _PLACEHOLDER_RE.sub("", template))


def similarity(a: list[str], b: list[str]) -> float:
    """Drain's simSeq: the share of positions where two templates of equal length hold the same token."""
    if len(a) != len(b) or not a:
        return 0.0
    return sum(1 for x, y in zip(a, b) if x == y) / len(a)


def merged(a: list[str], b: list[str]) -> list[str]:
    return [x if x == y else WILDCARD for x, y in zip(a, b)]


@dataclass
class Cluster:
    tokens: list[str]
    count: int = 1

    @property
    def template(self) -> str:
        return " ".join(self.tokens)


def cluster_key(tokens: list[str]) -> tuple[int, str]:
    """Drain's fixed-depth tree: length first, then the first token (a placeholder groups as itself)."""
    return len(tokens), (tokens[0] if tokens else "")


def best_cluster(tokens: list[str], candidates: list[list[str]]) -> int | None:
    """Index of the most similar candidate at or above the threshold, or None for a new cluster."""
    best, best_sim = None, SIMILARITY - 1e-9
    for index, other in enumerate(candidates):
        sim = similarity(tokens, other)
        if sim > best_sim:
            best, best_sim = index, sim
    return best


def cluster_lines(templates: list[str]) -> list[Cluster]:
    """In-memory clustering (the database version in store.py does the same, row by row)."""
    clusters: list[Cluster] = []
    for template in templates:
        tokens = template.split(" ")
        same = [c for c in clusters if cluster_key(c.tokens) == cluster_key(tokens)]
        index = best_cluster(tokens, [c.tokens for c in same])
        if index is None:
            clusters.append(Cluster(tokens))
        else:
            same[index].tokens = merged(same[index].tokens, tokens)
            same[index].count += 1
    return clusters


def draft_pattern(template: str) -> str:
    """A linear-time regex for a template: literal tokens escaped, placeholders as bounded runs of
    non-blank characters, tokens separated by runs of blanks."""
    parts = []
    for token in template.split(" "):
        pieces = re.split(r"(<(?:host|ip|user|time|glog|uuid|hex|path|num|\*)>)", token)
        out = ""
        for piece in pieces:
            if not piece:
                continue
            if _PLACEHOLDER_RE.fullmatch(piece):
                out += r"\d+" if piece == "<num>" else r"[^\s]{1,200}"
            else:
                out += re.escape(piece)
        parts.append(out)
    pattern = r"\s+".join(parts)
    # Two unbounded runs may not touch: `\d+` next to `[^\s]{1,200}` could overlap, so bound the digits.
    return pattern.replace(r"\d+[^\s]{1,200}", r"\d{1,20}[^\s]{1,200}").replace(r"[^\s]{1,200}\d+", r"[^\s]{1,200}\d{1,20}")


def draft_signature(template: str, example: str | None = None) -> str:
    """The front-matter block a curator pastes into a case's `signatures` (content/FORMAT.md)."""
    words = [t for t in re.findall(r"[A-Za-z]{3,}", _PLACEHOLDER_RE.sub(" ", template))][:4]
    ident = "-".join(w.lower() for w in words) or "new-signature"
    pattern = draft_pattern(template).replace("'", "''")
    sample = (example or template).replace('"', '\\"')
    return (
        f"  - id: {ident}\n"
        f"    description: TODO say in words what this line means and which program prints it.\n"
        f"    pattern: '{pattern}'\n"
        f"    weight: 3\n"
        f"    anchor: false\n"
        f"    examples:\n"
        f'      - text: "{sample}"\n'
        f'        release: "TODO program and release whose source prints this"\n'
    )

"""The evidence a reader is shown for each match: one row per log line (the signatures it matched, why each
counts, the rank that printed it, whether that rank is an odd one out), with the lines around it, and the odd
ranks' own lines first. Chosen by the engine from the text it read, so whoever renders a result never decodes
or scans the log again."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from diagnosis.engine import CaseMatch, Diagnosis
from diagnosis.rules import Rules
from diagnosis.text import line_rank, log_text
from diagnosis.verdict import RankVerdict

CONTEXT_LINES = 5
EVIDENCE_ROWS = 8
ODD_RANKS_SCANNED = 4
CONTEXT_CHARS = 2000
ODD_ROW_CHARS = 500
CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class SourceText:
    """A job's log files as lines (control characters dropped, as a page may show them), keyed as evidence names
    its file: the file's name when the job has several, else None."""

    lines: dict[str | None, list[str]]

    @classmethod
    def decoded(cls, sources: list[tuple[str, bytes | str]]) -> SourceText:
        keyed = {}
        for name, data in sources:
            keyed[name if len(sources) > 1 else None] = printable(log_text(data)[0]).split("\n")
        return cls(keyed)

    def text(self, key: str | None = None) -> str:
        return "\n".join(self.lines.get(key) or [])


def printable(text: str) -> str:
    """Text without the control characters HTML may not carry (colour codes were removed before)."""
    return CONTROL_RE.sub("", text)


def odd_ranks(verdict: RankVerdict | None) -> list[int]:
    """Ranks that are not where the others are: behind, in another group, or silent (in that order)."""
    if verdict is None:
        return []
    odd = dict.fromkeys(verdict.behind)  # ordered and unique, without a quadratic scan on a 4,000-rank paste
    for group in verdict.groups:
        if group.get("odd") and group.get("state") != "silent":
            odd.update(dict.fromkeys(group["ranks"]))
    odd.update(dict.fromkeys(verdict.silent))
    return list(odd)


def evidence_rows(
    diagnosis: Diagnosis, rules: Rules | None, texts: SourceText | None
) -> dict[str, tuple[list[dict[str, Any]], int]]:
    """Per matched case: its evidence rows (at most EVIDENCE_ROWS, odd ranks' lines first) and how many there were."""
    odd = odd_ranks(diagnosis.verdict)
    signatures = {}
    if odd and texts and rules is not None:
        wanted = {s["id"] for m in diagnosis.matches for s in m.signals}
        signatures = {s.id: s for s in rules.signatures if s.id in wanted}
    out = {}
    for match in diagnosis.matches:
        rows = _rows_by_line(match)
        extra = _odd_rank_rows(match, odd, texts, signatures, set(rows)) if signatures else []
        ordered = extra + sorted(rows.values(), key=lambda r: (r["rank"] not in odd, r["source"] or "", r["line"]))
        descriptions = {s["id"]: s["description"] for s in match.signals}
        shown = []
        for row in ordered[:EVIDENCE_ROWS]:
            row["reasons"] = [descriptions.get(s, s) for s in row.pop("signals")]
            row["odd"] = row["rank"] in odd if row["rank"] is not None else False
            row["context"] = _context(texts.lines.get(row["source"]) if texts else None, row["line"])
            shown.append(row)
        out[match.slug] = (shown, len(rows) + len(extra))
    return out


def _rows_by_line(match: CaseMatch) -> dict[tuple, dict[str, Any]]:
    """One row per line: a line several signatures matched lists each, and marks the widest match."""
    rows: dict[tuple, dict[str, Any]] = {}
    for e in match.evidence:
        key = (e.source, e.line)
        row = rows.get(key)
        if row is None:
            rows[key] = {
                "source": e.source,
                "line": e.line,
                "text": e.text,
                "span": list(e.span),
                "signals": [e.signal],
                "rank": line_rank(e.text),
            }
        elif e.signal not in row["signals"]:
            row["signals"].append(e.signal)
            if row["span"] == [0, 0] or (e.span[1] - e.span[0]) > (row["span"][1] - row["span"][0]):
                row["span"] = list(e.span)
    return rows


def _context(lines: list[str] | None, number: int) -> list[dict[str, Any]]:
    if not lines or number < 1:
        return []
    first = max(1, number - CONTEXT_LINES)
    last = min(len(lines), number + CONTEXT_LINES)
    return [{"line": n, "text": lines[n - 1][:CONTEXT_CHARS], "here": n == number} for n in range(first, last + 1)]


def _odd_rank_rows(
    match: CaseMatch, odd: list[int], texts: SourceText, signatures: dict[str, Any], have: set[tuple]
) -> list[dict[str, Any]]:
    """Lines of the ranks that are the odd ones out which the match's own signatures also match: the rank
    behind or disagreeing explains more than the tenth rank that timed out like the others."""
    rows: list[dict[str, Any]] = []
    regexes = [(s["id"], signatures[s["id"]]) for s in match.signals if s["id"] in signatures and s["weight"] > 0]
    if not regexes:
        return rows
    for rank in odd[:ODD_RANKS_SCANNED]:
        needles = (f"[rank{rank}]", f"[Rank {rank}]")
        for source, lines in texts.lines.items():
            found = 0
            for index, line in enumerate(lines):
                if not any(n in line for n in needles):
                    continue
                for sig_id, sig in regexes:
                    hit = sig.regex.search(line)
                    if hit and (source, index + 1) not in have:
                        have.add((source, index + 1))
                        rows.append(
                            {
                                "source": source,
                                "line": index + 1,
                                "text": line[:ODD_ROW_CHARS],
                                "span": [hit.start(), hit.end()],
                                "signals": [sig_id],
                                "rank": rank,
                            }
                        )
                        found += 1
                        break
                if found >= 2:
                    break
            if found:
                break
    return rows

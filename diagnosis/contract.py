"""The diagnosis as the API and the command line give it: the JSON of DESIGN.md's "Diagnosis contract" and
its text form. Pure: the case titles and page addresses come from a Catalog (the database and the URL map on
the site, the published rules snapshot on the command line), so the command line can answer without Django.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from diagnosis.engine import CONFIDENT, Diagnosis
from diagnosis.verdict import MAX_GROUPS, failure_text


@dataclass(frozen=True)
class Catalog:
    """What a diagnosis links to: each case's title and page address, and the known-harmless list's."""

    titles: dict[str, str]
    case_urls: dict[str, str]
    harmless_url: str

    def url(self, slug: str, section: str | None = None) -> str:
        """A case page, or one of its sections (`#fix-2`)."""
        url = self.case_urls[slug]
        return f"{url}#{section}" if section else url


def rank_groups_json(diagnosis: Diagnosis, catalog: Catalog) -> dict[str, Any] | None:
    """Where every rank is, each group with the URL of the case and fix step its evidence supports."""
    if diagnosis.rank_groups is None:
        return None
    groups = []
    for group in diagnosis.rank_groups["groups"]:
        case = group["case"]
        urls = (
            {"url": catalog.url(case), "fix_url": catalog.url(case, group["fix_step"])}
            if case
            else {"url": None, "fix_url": None}
        )
        groups.append({**group, **urls})
    return {**diagnosis.rank_groups, "groups": groups}


def diagnosis_json(diagnosis: Diagnosis, catalog: Catalog, *, notes: list[str] | None = None) -> dict[str, Any]:
    """The contract of DESIGN.md ("Diagnosis contract"), plus `kind` and `fix_step` per match, the rank
    verdict when ranks reported, where every rank is, the first failure, the known-harmless lines set aside,
    and `notes` on what was read (files skipped)."""
    matches = []
    for match in diagnosis.matches:
        url = catalog.url(match.slug)
        matches.append(
            {
                "slug": match.slug,
                "title": catalog.titles.get(match.slug, match.slug),
                "kind": match.kind,
                "score": match.score,
                "confidence": match.confidence,
                "url": url,
                "fix_step": match.fix_step,
                "fix_url": catalog.url(match.slug, match.fix_step) if match.fix_step else None,
                "steps_not_for_your_versions": match.steps_not_for_versions,
                "evidence": [_evidence_json(e) for e in match.evidence],
                "signals": match.signals,
            }
        )
    body: dict[str, Any] = {"matches": matches, "facts": diagnosis.facts, "stats": diagnosis.stats}
    if diagnosis.verdict:
        verdict = diagnosis.verdict
        body["ranks"] = {
            "summary": verdict.summary,
            "behind": verdict.behind,
            "silent": verdict.silent,
            "disagree": verdict.disagree,
            "first_collective": verdict.first_collective,
            "object_collective": verdict.object_collective,
            "groups": verdict.groups[:MAX_GROUPS],
            "groups_total": len(verdict.groups),
            "table": verdict.table,
            "table_total": verdict.table_total,
        }
    where = rank_groups_json(diagnosis, catalog)
    if where is not None:
        body["rank_groups"] = where
    if diagnosis.failure:
        failure = diagnosis.failure
        body["first_failure"] = {
            "kind": failure.kind,
            "rank": failure.rank,
            "line": failure.line,
            "time": failure.time,
            "text": failure.text,
            "summary": failure_text(failure),
            **({"file": failure.source} if failure.source else {}),
        }
    if diagnosis.timeouts is not None:
        body["timeouts"] = diagnosis.timeouts
    if diagnosis.stack_groups:
        body["stacks"] = {"groups": diagnosis.stack_groups}
    if diagnosis.recorder is not None:
        recorder = diagnosis.recorder
        body["flight_recorder"] = {
            "summary": recorder.summary,
            "groups": recorder.groups,
            "version": recorder.version,
            "ranks": recorder.ranks,
            "process_groups": recorder.process_groups,
            "notes": recorder.notes,
        }
    harmless_url = catalog.harmless_url
    body["harmless"] = [
        {
            "line": h.line,
            "text": h.text,
            "why": h.why,
            "title": h.title,
            "url": f"{harmless_url}#{h.id}",
            **({"file": h.source} if h.source else {}),
        }
        for h in diagnosis.harmless
    ]
    if diagnosis.repairs:
        body["inputs"] = {"repairs": diagnosis.repairs}
    if notes:
        body.setdefault("inputs", {})["notes"] = list(notes)
    return body


def _evidence_json(evidence) -> dict[str, Any]:
    item = {"line": evidence.line, "text": evidence.text, "signal": evidence.signal, "match": list(evidence.span)}
    if evidence.source:
        item["file"] = evidence.source
    return item


def json_text(result: dict) -> str:
    return json.dumps(result, indent=2, ensure_ascii=False, default=str)


def diagnosis_text(result: dict) -> str:
    """The command line's reading of the JSON: the answer, each case with its evidence, where the ranks are."""
    out = []
    stats = result["stats"]
    out.append(f"Read {stats['lines']} lines ({stats['bytes']} bytes) in {stats['ms']} ms.")
    confident = [m for m in result["matches"] if m["confidence"] >= CONFIDENT]
    if "first_failure" in result:
        out.append(f"First failure: {result['first_failure']['summary']}.")
    if confident and confident[0]["kind"] == "guide":
        out.append(
            "Not enough to tell why: the log shows a timeout and nothing that explains it. "
            f"Next step: {confident[0]['title']} ({confident[0]['url']})."
        )
    elif not confident:
        out.append(
            "No failure found in this log: every suspicious line is a known-harmless message."
            if result["harmless"]
            else "No known case explains this log with confidence."
        )
    for number, match in enumerate(result["matches"], 1):
        kind = " (guide)" if match["kind"] == "guide" else ""
        out.append(f"\n{number}. {match['title']}  [{match['slug']}]{kind}  confidence {match['confidence']:.2f}")
        if match["fix_url"]:
            out.append(f"   do this first: {match['fix_url']}")
        for evidence in match["evidence"][:6]:
            where = f"{evidence['file']}:" if "file" in evidence else ""
            out.append(f"   {where}{evidence['line']:>6}  {evidence['text'][:160]}")
    if "rank_groups" in result:
        out.append("\nWhere is every rank: " + result["rank_groups"]["summary"])
        if "ranks" in result:
            out.append(f"  {result['ranks']['summary']}")
        for group in result["rank_groups"]["groups"]:
            link = f"  -> {group['fix_url']}" if group["fix_url"] else ""
            who = f" ({group['label']})" if group["count"] > 1 else ""
            labels = "".join(f" [{label}]" for label in group["labels"])
            out.append(f"  {'*' if group['odd'] else ' '} {group['text']}{labels}{who}{link}")
    elif "ranks" in result:
        out.append(f"\nWhere is every rank: {result['ranks']['summary']}")
    if "timeouts" in result and result["timeouts"]["telling"]:
        out.append(f"\nTimeouts: {result['timeouts']['summary']}")
        for limit in result["timeouts"]["limits"]:
            where = f"{limit['source']}:" if limit["source"] else ""
            value = limit["duration"] or "time limit"
            out.append(f"  {value:<16} {limit['setting']}{' (fired)' if limit['fired'] else ''}  line {where}{limit['line']}")
        for note in result["timeouts"]["notes"]:
            out.append(f"  ! {note}")
    if "flight_recorder" in result:
        out.append(f"\nFlight Recorder: {result['flight_recorder']['summary']}")
        for group in result["flight_recorder"]["groups"]:
            out.append(f"  {'*' if group.get('odd') else ' '} {group['where']}")
    if "stacks" in result:
        out.append(
            "\nStacks: "
            + " · ".join(
                f"{g['label']} in {g['where']}{' (odd one out)' if g['odd'] else ''}" for g in result["stacks"]["groups"]
            )
        )
    for harmless in result["harmless"]:
        where = f"{harmless['file']}:" if "file" in harmless else ""
        out.append(f"\nNot the problem: {where}{harmless['line']}: {harmless['title']} ({harmless['url']})")
    if result["facts"]:
        out.append("\nFacts: " + ", ".join(f"{k}={v}" for k, v in result["facts"].items()))
    return "\n".join(out)

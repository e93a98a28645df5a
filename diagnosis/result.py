"""One diagnosis, one Result: what every interface shows, decided once. The API and the command line render its
JSON (DESIGN.md's "Diagnosis contract"), the command line its text, a ticket its Markdown, and the page and a shared
report its snapshot (plain data, stored as it is). "The best answer" is chosen here and nowhere else.

Pure: case titles, summaries, steps and page addresses come from a Catalog (the database and the URL map on the
site, the published rules snapshot on the command line), so the command line can answer without Django.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from diagnosis.conditions import fact_rows
from diagnosis.engine import CONFIDENT, Diagnosis
from diagnosis.evidence import SourceText, evidence_rows
from diagnosis.markdown_safe import code_span, fenced
from diagnosis.rules import Rules
from diagnosis.verdict import MAX_GROUPS, failure_text, ranks_text

VERSION = 1  # of the snapshot a shared report stores; bump it when a stored field changes meaning
MAX_NOTES = 20


@dataclass(frozen=True)
class Catalog:
    """What a diagnosis links to: each case's title, summary, sections (id, title) and page address, and the
    known-harmless list's address."""

    titles: dict[str, str]
    case_urls: dict[str, str]
    harmless_url: str
    summaries: dict[str, str] = field(default_factory=dict)
    sections: dict[str, list[dict[str, str]]] = field(default_factory=dict)

    def url(self, slug: str, section: str | None = None) -> str:
        """A case page, or one of its sections (`#fix-2`)."""
        url = self.case_urls[slug]
        return f"{url}#{section}" if section else url

    def section_title(self, slug: str, section: str | None) -> str:
        return next((s["title"] for s in self.sections.get(slug, []) if s["id"] == section), "") if section else ""

    def fix_steps(self, slug: str) -> list[dict[str, str]]:
        return [{"id": s["id"], "title": s["title"]} for s in self.sections.get(slug, []) if s["id"].startswith("fix-")]


@dataclass(frozen=True)
class Result:
    """A diagnosis with its cases named and linked, its evidence chosen, and its answer decided."""

    diagnosis: Diagnosis
    catalog: Catalog
    best_slug: str  # the confident cause that answers the log, or ""
    guide_slug: str  # the triage guide among the matches, or ""
    rows: dict[str, tuple[list[dict[str, Any]], int]]  # per case: the evidence rows shown, and how many there were
    near_miss: dict[str, Any] | None
    notes: list[str] = field(default_factory=list)
    texts: SourceText | None = None  # the logs as lines, when kept for context: never rendered, never stored
    version: int = VERSION

    @property
    def facts(self) -> dict[str, Any]:
        return self.diagnosis.facts

    @property
    def handoff_facts(self) -> dict[str, Any]:
        """What the troubleshooter starts from: the facts, and the case the diagnosis named with confidence."""
        return {**self.diagnosis.facts, "case": self.best_slug} if self.best_slug else dict(self.diagnosis.facts)

    def to_json(self) -> dict[str, Any]:
        """The contract of DESIGN.md ("Diagnosis contract"), plus `kind` and `fix_step` per match, the rank verdict
        when ranks reported, where every rank is, the first failure, the known-harmless lines set aside, and `notes`
        on what was read (files skipped)."""
        return _json(self.diagnosis, self.catalog, self.notes)

    def to_text(self) -> str:
        """The command line's reading: the answer, each case with its evidence, where the ranks are."""
        return _text(self.to_json(), self.best_slug, self.guide_slug)

    def to_snapshot(self, *, hits: list | None = None, wizard_url: str = "", capture_url: str = "") -> dict[str, Any]:
        """Everything the result page shows, as plain data: what Share stores (after redaction). `hits`: the text
        search's cases (objects with slug, url, title, summary), shown when no case matched."""
        return _snapshot(self, hits or [], wizard_url, capture_url)

    def to_markdown(self, url: str = "", *, origin: str = "") -> str:
        """A short summary for a ticket or a wiki."""
        return snapshot_markdown(self.to_snapshot(), url, origin=origin)


def result_build(
    diagnosis: Diagnosis,
    catalog: Catalog,
    *,
    rules: Rules | None = None,
    texts: SourceText | None = None,
    notes: list[str] | None = None,
) -> Result:
    """Name, link and decide: the best answer is the first cause when it is confident; `texts` gives each evidence line its context and lets the odd ranks' own lines be shown first."""
    named = [m for m in diagnosis.matches if m.slug in catalog.titles]
    causes = [m for m in named if m.kind == "cause"]
    best = causes[0] if causes and causes[0].confidence >= CONFIDENT else None
    guide = next((m for m in named if m.kind == "guide"), None)
    return Result(
        diagnosis=diagnosis,
        catalog=catalog,
        best_slug=best.slug if best else "",
        guide_slug=guide.slug if guide else "",
        rows=evidence_rows(diagnosis, rules, texts),
        near_miss=_near_miss(best, causes, rules, catalog) if best else None,
        notes=list(notes or []),
        texts=texts,
    )


def answer_slugs(snapshot: dict[str, Any]) -> tuple[str, str]:
    """The best cause and the guide of a stored snapshot, as result_build chose them (`guide_slug` is absent from
    snapshots stored before it was kept: then the first guide among the matches, as it was chosen then)."""
    guide = snapshot.get("guide_slug")
    if guide is None:
        guide = next((m["slug"] for m in snapshot.get("matches", []) if m["kind"] == "guide"), "")
    return snapshot.get("best_slug", ""), guide


# --- JSON ----------------------------------------------------------------------------------------------------------


def _json(diagnosis: Diagnosis, catalog: Catalog, notes: list[str]) -> dict[str, Any]:
    matches = []
    for match in diagnosis.matches:
        matches.append(
            {
                "slug": match.slug,
                "title": catalog.titles.get(match.slug, match.slug),
                "kind": match.kind,
                "score": match.score,
                "confidence": match.confidence,
                "url": catalog.url(match.slug),
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
    if diagnosis.rank_groups is not None:
        body["rank_groups"] = _rank_groups_json(diagnosis.rank_groups, catalog)
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
    body["harmless"] = [
        {
            "line": h.line,
            "text": h.text,
            "why": h.why,
            "title": h.title,
            "url": f"{catalog.harmless_url}#{h.id}",
            **({"file": h.source} if h.source else {}),
        }
        for h in diagnosis.harmless
    ]
    if diagnosis.unrecognised:
        body["unrecognised"] = [
            {"line": line, "text": text, **({"file": source} if source else {})} for source, line, text in diagnosis.unrecognised
        ]
    if diagnosis.repairs:
        body["inputs"] = {"repairs": diagnosis.repairs}
    if notes:
        body.setdefault("inputs", {})["notes"] = list(notes)
    return body


def _rank_groups_json(where: dict[str, Any], catalog: Catalog) -> dict[str, Any]:
    """Where every rank is, each group with the URL of the case and fix step its evidence supports."""
    groups = []
    for group in where["groups"]:
        case = group["case"]
        urls = (
            {"url": catalog.url(case), "fix_url": catalog.url(case, group["fix_step"])}
            if case
            else {"url": None, "fix_url": None}
        )
        groups.append({**group, **urls})
    return {**where, "groups": groups}


def _evidence_json(evidence) -> dict[str, Any]:
    item = {"line": evidence.line, "text": evidence.text, "signal": evidence.signal, "match": list(evidence.span)}
    if evidence.source:
        item["file"] = evidence.source
    return item


def json_text(body: dict) -> str:
    return json.dumps(body, indent=2, ensure_ascii=False, default=str)


# --- text ----------------------------------------------------------------------------------------------------------


def _text(result: dict, best_slug: str, guide_slug: str) -> str:
    out = []
    stats = result["stats"]
    out.append(f"Read {stats['lines']} lines ({stats['bytes']} bytes) in {stats['ms']} ms.")
    if "first_failure" in result:
        out.append(f"First failure: {result['first_failure']['summary']}.")
    confident = [m for m in result["matches"] if m["confidence"] >= CONFIDENT]
    guide = next((m for m in confident if m["slug"] == guide_slug), None)
    if not best_slug and guide is not None:
        out.append(
            "Not enough to tell why: the log shows a timeout and nothing that explains it. "
            f"Next step: {guide['title']} ({guide['url']})."
        )
    elif not best_slug:
        out.append(
            "No failure found in this log: every suspicious line is a known-harmless message."
            if result["harmless"] and "first_failure" not in result
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


# --- the snapshot: what the page shows and a shared report stores ----------------------------------------------------


def _snapshot(result: Result, hits: list, wizard_url: str, capture_url: str) -> dict[str, Any]:
    diagnosis, catalog = result.diagnosis, result.catalog
    matches = []
    for match in diagnosis.matches:
        if match.slug not in catalog.titles:
            continue  # a case the served content no longer has
        shown, total = result.rows.get(match.slug, ([], 0))
        fix_step = match.fix_step or ""
        matches.append(
            {
                "slug": match.slug,
                "title": catalog.titles[match.slug],
                "summary": catalog.summaries.get(match.slug, ""),
                "kind": match.kind,
                "confidence": match.confidence,
                "score": match.score,
                "url": catalog.url(match.slug),
                "fix_step": fix_step,
                "fix_title": catalog.section_title(match.slug, fix_step),
                "steps": catalog.fix_steps(match.slug),
                "signals": [
                    {
                        "id": s["id"],
                        "description": s["description"],
                        "weight": s["weight"],
                        "kind": s.get("kind", "line"),
                        "count": s.get("count", 1),
                    }
                    for s in match.signals
                ],
                "evidence": [dict(row) for row in shown],
                "evidence_total": total,
            }
        )
    verdict = diagnosis.verdict
    match_slugs = {m["slug"] for m in matches}
    hosts = diagnosis.facts.get("hosts")
    return {
        "version": result.version,
        "best_slug": result.best_slug,
        "guide_slug": result.guide_slug,
        "matches": matches,
        "near_miss": result.near_miss,
        "failure": failure_text(diagnosis.failure) if diagnosis.failure else "",
        "harmless": [
            {"line": h.line, "source": h.source, "text": h.text, "id": h.id, "title": h.title, "why": h.why}
            for h in diagnosis.harmless
        ],
        "repairs": list(diagnosis.repairs),
        "facts": [list(row) for row in fact_rows(diagnosis.facts)],
        "verdict": _verdict_snapshot(verdict) if verdict else None,
        "rank_groups": _rank_groups_snapshot(diagnosis.rank_groups, catalog) if diagnosis.rank_groups else None,
        "timeouts": _timeouts_snapshot(diagnosis.timeouts) if diagnosis.timeouts else None,
        "notes": result.notes[:MAX_NOTES],
        "stats": dict(diagnosis.stats),
        "hits": [
            {"url": h.url or catalog.case_urls.get(h.slug, ""), "title": h.title, "summary": h.summary}
            for h in hits
            # a known-harmless message's page is not a possible cause: it is listed apart, as harmless
            if h.slug not in match_slugs and not (h.url or "").startswith(catalog.harmless_url)
        ]
        if not matches
        else [],
        "wizard_url": wizard_url or "",
        "capture_url": capture_url or "",
        "hosts": [str(h) for h in hosts] if isinstance(hosts, list) else [],
    }


def _near_miss(best: Any, causes: list, rules: Rules | None, catalog: Catalog) -> dict[str, Any] | None:
    """What would confirm or rule out the runner-up: its strongest signature that did not match, and a signature
    or condition that argues against it."""
    runner = next((m for m in causes if m.slug != best.slug), None)
    if runner is None:
        return None
    seen = {s["id"] for s in runner.signals}
    confirm = rule_out = ""
    if rules is not None:
        own = [s for s in rules.signatures if s.case == runner.slug]
        missing = sorted(
            (s for s in own if s.id not in seen and s.weight > 0),
            key=lambda s: (not s.anchor, -s.weight),
        )
        against = sorted(
            (s for s in [*own, *(c for c in rules.conditions if c.case == runner.slug)] if s.weight < 0 and s.id not in seen),
            key=lambda s: s.weight,
        )
        confirm = missing[0].description if missing else ""
        rule_out = (against[0].description or "") if against else ""
    return {
        "slug": runner.slug,
        "title": catalog.titles.get(runner.slug, runner.slug),
        "percent": round(runner.confidence * 100),
        "url": catalog.url(runner.slug),
        "confirm": confirm,
        "rule_out": rule_out,
    }


def _timeouts_snapshot(timeouts: dict[str, Any]) -> dict[str, Any]:
    """The limits without their log lines (a launch line can carry a token): a shared report keeps line numbers."""
    keep = ("kind", "setting", "duration", "line", "source", "fired", "bounds")
    return {
        "summary": timeouts["summary"],
        "limits": [{key: limit[key] for key in keep} for limit in timeouts["limits"]],
        "notes": list(timeouts["notes"]),
        "telling": timeouts["telling"],
    }


def _rank_groups_snapshot(where: dict[str, Any], catalog: Catalog) -> dict[str, Any]:
    """Where every rank is, as the page shows it: each group with its place, the odd flag, and a link to the case and
    fix step its evidence supports (rank lists kept as their short labels, so a 4096-rank job stays small)."""
    groups = []
    for group in where["groups"]:
        slug = group["case"] if group["case"] in catalog.titles else ""
        groups.append(
            {
                "label": group["label"],
                "count": group["count"],
                "place": group["place"],
                "text": group["text"],
                "basis": group["basis"],
                "state": group["state"],
                "odd": group["odd"],
                "labels": list(group.get("labels") or []),
                "frames": list(group["frames"][:5]),
                "case_title": catalog.titles[slug] if slug else "",
                "because": group["because"] or "",
                "fix_url": catalog.url(slug, group["fix_step"]) if slug else "",
                "fix_title": catalog.section_title(slug, group["fix_step"] or "") if slug else "",
            }
        )
    return {
        "summary": where["summary"],
        "groups": groups,
        "silent": ranks_text(where["silent"]) if where["silent"] else "",
        "missing": ranks_text(where["missing"]) if where["missing"] else "",
    }


def _verdict_snapshot(verdict) -> dict[str, Any]:
    """What "Where is every rank" shows beside the groups: the watchdog verdict in a sentence, and its per-rank table."""
    agree = len([g for g in verdict.groups if g["state"] != "silent"]) == 1 and not verdict.silent
    return {
        "summary": verdict.summary,
        "agree": agree,
        "behind": list(verdict.behind),
        "silent": list(verdict.silent),
        "table": [dict(row) for row in verdict.table],
        "table_total": verdict.table_total,
    }


# --- Markdown ------------------------------------------------------------------------------------------------------


def snapshot_markdown(snapshot: dict[str, Any], url: str = "", *, origin: str = "") -> str:
    """A short summary for a ticket: the answer, the step, the odd ranks, the evidence lines. From the snapshot, so a
    report stored long ago renders the same way. The site's links are made absolute with `origin` (scheme and host):
    a relative /kb/ link breaks once pasted into a wiki or a chat."""

    def link(path: str) -> str:
        return origin + path if path.startswith("/") else path

    best_slug, guide_slug = answer_slugs(snapshot)
    matches = snapshot.get("matches", [])
    best = next((m for m in matches if m["slug"] == best_slug), None)
    guide = next((m for m in matches if m["slug"] == guide_slug), None)
    out = ["## Hang Doctor diagnosis" + (f": {url}" if url else ""), ""]
    if best:
        out.append(f"**Most likely cause:** [{best['title']}]({link(best['url'])}) ({_percent(best)}% confidence)")
        why = next((s["description"] for s in best["signals"] if s["weight"] > 0), "")
        if why:
            out.append(f"**Why:** {why}")
        step = f" ({best['fix_title']})" if best.get("fix_title") else ""
        out.append(f"**Do this first:** {link(fix_url(best))}{step}")
    elif guide:
        out.append(f"**No known cause with confidence.** Next step: [{guide['title']}]({link(fix_url(guide))})")
    else:
        out.append("**No known case explains this log.**")
    # Text read from the log goes only in code spans and fences (diagnosis/markdown_safe.py): never a live link.
    if snapshot.get("failure"):
        out.append(f"**First failure:** {code_span(snapshot['failure'])}")
    if snapshot.get("verdict"):
        out += ["", f"**Ranks:** {code_span(snapshot['verdict']['summary'])}"]
    timeouts = snapshot.get("timeouts")
    if timeouts:
        out += ["", f"**Timeouts:** {code_span(timeouts['summary'])}"] + [f"- {code_span(note)}" for note in timeouts["notes"]]
    if best and best["evidence"]:
        out += ["", "Evidence:", ""]
        out.append(
            fenced(
                [f"{(r['source'] + ':') if r.get('source') else ''}{r['line']}: {r['text'][:300]}" for r in best["evidence"][:6]]
            )
        )
    others = [m for m in matches if m["kind"] == "cause" and m is not best][:3]
    if others:
        out += ["", "Other cases: " + "; ".join(f"[{m['title']}]({link(m['url'])}) {_percent(m)}%" for m in others)]
    return "\n".join(out) + "\n"


def fix_url(match: dict[str, Any]) -> str:
    """Where a match's "Do this first" points: its fix step, or the case's Fix section."""
    return f"{match['url']}#{match['fix_step'] or 'fix'}"


def _percent(match: dict[str, Any]) -> int:
    return round(match["confidence"] * 100)

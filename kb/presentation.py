"""Shape a diagnosis for templates: evidence escaped first, then the matched part wrapped in <mark>."""

from __future__ import annotations

import re
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from kb.diagnosis.engine import CONFIDENT, Diagnosis
from kb.diagnosis.verdict import failure_text, ranks_text
from kb.diagnosis.versions import versions_text
from kb.models import Case, case_url
from kb.reports.markdown_safe import code_span, fenced

FACT_LABELS = {
    "op_type": "Collective (OpType)",
    "seq_num": "Sequence number",
    "timeout_ms": "Timeout (ms)",
    "ran_for_ms": "Ran for (ms)",
    "timed_out_ranks": "Ranks that timed out",
    "ranks": "Ranks seen",
    "world_size": "World size",
    "stage": "Last stage reached",
    "launcher": "Launcher",
    "frameworks": "Frameworks",
    "parallelism": "Model-parallel layouts",
    "torch_version": "PyTorch",
    "nccl_version": "NCCL",
    "te_version": "TransformerEngine",
    "cuda_version": "CUDA",
    "kernel_version": "Linux kernel",
    "interfaces": "Network interfaces",
    "transport": "NCCL network transport",
    "p2p_channels": "P2P transports",
    "hosts": "Hosts",
    "process_groups": "Process groups",
    "store_timeout_s": "Store timeout (s)",
    "timeout_set_s": "Timeout the framework was set to (s)",
    "timeout_not_applied": "That timeout did not reach the process group",
    "watchdog_late_s": "Watchdog reported the timeout this late (s)",
    "stages_done": "Stages completed",
    "silent_ranks": "Silent ranks",
    "behind_ranks": "Ranks behind",
    "ranks_disagree": "Ranks disagree (desync)",
    "first_collective": "Stuck in the first collective",
    "nccl_versions": "NCCL releases printed",
    "ras_missing_ranks": "RAS: ranks not answering",
    "debug_unanswered_ranks": "Debug server: ranks not answering",
    "ras_dead_processes": "RAS: processes declared dead",
    "ras_behind_ranks": "RAS: ranks behind",
    "ras_counts_frozen": "RAS: counts frozen between reports",
    "nccl_builds_differ": "Different NCCL builds across nodes",
    "torch_band": "PyTorch (dated by wording)",
    "nccl_band": "NCCL (dated by wording)",
    "object_collective": "Object collective (size exchange)",
    "first_failure": "First failure",
    "first_failure_rank": "Rank that failed first",
    "stack_frames": "Innermost stack frames",
    "nccl_tests": "nccl-tests",
    "p2p_check": "CUDA peer-to-peer test",
    "shm_size_mb": "/dev/shm size (MiB)",
    "gpu_links": "GPU links (topo -m)",
    "ib_port_state": "IB port state",
    "link_layer": "IB link layer",
}
_HIDDEN_FACTS = {"launchers"}


def body_with_step_versions(body_html: str, steps: list[dict]) -> SafeString:
    """The case body with each fix step's version range shown in its heading ("PyTorch < 2.14 only"), from
    the front matter's `steps`, so a reader sees at once which steps hold for their releases."""
    html = body_html
    for step in steps:
        if not step.get("versions"):
            continue
        badge = f' <span class="step-versions">{escape(versions_text(step["versions"]))} only</span>'
        html = re.sub(
            rf'(<h3 id="{re.escape(step["anchor"])}">.*?)(<a class="headerlink"|</h3>)',
            lambda m: m.group(1) + badge + m.group(2),
            html,
            count=1,
        )
    return mark_safe(html)  # noqa: S308 - body_html is the loader's nh3-cleaned HTML; the badge is escaped


def marked_line(text: str, start: int, end: int) -> SafeString:
    """Escape every part of an untrusted line, then mark the matched part."""
    if not 0 <= start < end <= len(text):
        return mark_safe(escape(text))
    return mark_safe(f"{escape(text[:start])}<mark>{escape(text[start:end])}</mark>{escape(text[end:])}")


def fact_rows(facts: dict[str, Any]) -> list[tuple[str, str]]:
    rows = []
    for key, value in facts.items():
        if key in _HIDDEN_FACTS:
            continue
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value[:40]) + (f" … ({len(value)} in all)" if len(value) > 40 else "")
        rows.append((FACT_LABELS.get(key, key.replace("_", " ").capitalize()), str(value)))
    return rows


def diagnosis_view_model(diagnosis: Diagnosis, sources: list[tuple[str, bytes | str]] | None = None) -> dict[str, Any]:
    """The view of a live diagnosis (kept for callers that have no snapshot)."""
    return snapshot_view(result_snapshot(diagnosis, sources))


# --- The result, answer first (issue 10) ---------------------------------------------------------------
# A diagnosis becomes a plain, JSON-able snapshot (what a shared report stores, redacted), and a snapshot
# becomes the view the template reads (escaped, cut and <mark>ed). Live results and /d/<id> share both.

CUT_WIDTH = 220  # a longer evidence line is cut around its highlight
CONTEXT_LINES = 5
EVIDENCE_ROWS = 8
ODD_RANKS_SCANNED = 4
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_RANK_RE = re.compile(r"\[(?:rank|Rank|RANK)\s?(\d{1,6})\]|\brank (\d{1,6})\b")


def _source_lines(sources: list[tuple[str, bytes | str]] | None) -> dict[str | None, list[str]]:
    if not sources:
        return {}
    from kb.diagnosis.text import log_text

    out: dict[str | None, list[str]] = {}
    for name, data in sources:
        key = name if len(sources) > 1 else None
        out[key] = _CONTROL_RE.sub("", log_text(data)[0]).split("\n")
    return out


def printable(text: str) -> str:
    """Text without the control characters HTML may not carry (colour codes were removed before)."""
    return _CONTROL_RE.sub("", text)


def _line_rank(text: str) -> int | None:
    match = _RANK_RE.search(text[:300])
    if not match:
        return None
    return int(match.group(1) or match.group(2))


def _odd_ranks(verdict) -> list[int]:
    if verdict is None:
        return []
    odd = dict.fromkeys(verdict.behind)  # ordered and unique, without a quadratic scan on a 4,000-rank paste
    for group in verdict.groups:
        if group.get("odd") and group.get("state") != "silent":
            odd.update(dict.fromkeys(group["ranks"]))
    odd.update(dict.fromkeys(verdict.silent))
    return list(odd)


def _context(lines: list[str] | None, number: int) -> list[dict[str, Any]]:
    if not lines or number < 1:
        return []
    first = max(1, number - CONTEXT_LINES)
    last = min(len(lines), number + CONTEXT_LINES)
    return [{"line": n, "text": lines[n - 1][:2000], "here": n == number} for n in range(first, last + 1)]


def _odd_rank_rows(
    match, odd: list[int], texts: dict[str | None, list[str]], signatures: dict[str, Any], have: set[tuple]
) -> list[dict[str, Any]]:
    """Lines of the ranks that are the odd ones out which the match's own signatures also match: the rank
    behind or disagreeing explains more than the tenth rank that timed out like the others."""
    rows: list[dict[str, Any]] = []
    regexes = [(s["id"], signatures[s["id"]]) for s in match.signals if s["id"] in signatures and s["weight"] > 0]
    if not regexes:
        return rows
    for rank in odd[:ODD_RANKS_SCANNED]:
        needles = (f"[rank{rank}]", f"[Rank {rank}]")
        for source, lines in texts.items():
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
                                "text": line[:500],
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


def result_snapshot(
    diagnosis: Diagnosis,
    sources: list[tuple[str, bytes | str]] | None = None,
    *,
    hits: list | None = None,
    wizard_url: str | None = None,
    capture_url: str | None = None,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """Everything the result page shows, as plain data: what Share stores (after redaction)."""
    cases = {c.slug: c for c in Case.objects.filter(slug__in=[m.slug for m in diagnosis.matches])}
    texts = _source_lines(sources)
    odd = _odd_ranks(diagnosis.verdict)
    signatures: dict[str, Any] = {}
    if odd and texts:
        from kb.diagnose import rules_current

        wanted = {s["id"] for m in diagnosis.matches for s in m.signals}
        signatures = {s.id: s for s in rules_current().signatures if s.id in wanted}
    matches = []
    for match in diagnosis.matches:
        case = cases.get(match.slug)
        if case is None:
            continue
        descriptions = {s["id"]: s["description"] for s in match.signals}
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
                    "rank": _line_rank(e.text),
                }
            elif e.signal not in row["signals"]:
                row["signals"].append(e.signal)
                if row["span"] == [0, 0] or (e.span[1] - e.span[0]) > (row["span"][1] - row["span"][0]):
                    row["span"] = list(e.span)
        extra = _odd_rank_rows(match, odd, texts, signatures, set(rows)) if signatures else []
        ordered = extra + sorted(rows.values(), key=lambda r: (r["rank"] not in odd, r["source"] or "", r["line"]))
        evidence = []
        for row in ordered[:EVIDENCE_ROWS]:
            row["reasons"] = [descriptions.get(s, s) for s in row.pop("signals")]
            row["odd"] = row["rank"] in odd if row["rank"] is not None else False
            row["context"] = _context(texts.get(row["source"]), row["line"])
            evidence.append(row)
        step_titles = {s["id"]: s["title"] for s in case.sections}
        fix_step = match.fix_step or ""
        matches.append(
            {
                "slug": match.slug,
                "title": case.title,
                "summary": case.summary,
                "kind": match.kind,
                "confidence": match.confidence,
                "score": match.score,
                "url": case.get_absolute_url(),
                "fix_step": fix_step,
                "fix_title": step_titles.get(fix_step, ""),
                "steps": [{"id": s["id"], "title": s["title"]} for s in case.fix_steps()],
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
                "evidence": evidence,
                "evidence_total": len(rows) + len(extra),
            }
        )
    causes = [m for m in matches if m["kind"] == "cause"]
    best = causes[0] if causes and causes[0]["confidence"] >= CONFIDENT else None
    near = _near_miss(best, causes, cases) if best else None
    verdict = diagnosis.verdict
    match_slugs = {m["slug"] for m in matches}
    return {
        "version": 1,
        "best_slug": best["slug"] if best else "",
        "matches": matches,
        "near_miss": near,
        "failure": failure_text(diagnosis.failure) if diagnosis.failure else "",
        "harmless": [
            {"line": h.line, "source": h.source, "text": h.text, "id": h.id, "title": h.title, "why": h.why}
            for h in diagnosis.harmless
        ],
        "repairs": list(diagnosis.repairs),
        "facts": [list(row) for row in fact_rows(diagnosis.facts)],
        "verdict": _verdict_snapshot(verdict) if verdict else None,
        "rank_groups": _rank_groups_snapshot(diagnosis.rank_groups, cases) if diagnosis.rank_groups else None,
        "timeouts": _timeouts_snapshot(diagnosis.timeouts) if diagnosis.timeouts else None,
        "notes": list(notes or [])[:20],
        "stats": dict(diagnosis.stats),
        "hits": [
            {"url": h.url or case_url(h.slug), "title": h.title, "summary": h.summary}
            for h in (hits or [])
            if h.slug not in match_slugs
        ]
        if not matches
        else [],
        "wizard_url": wizard_url or "",
        "capture_url": capture_url or "",
        "hosts": [str(h) for h in diagnosis.facts.get("hosts", [])] if isinstance(diagnosis.facts.get("hosts"), list) else [],
    }


def _near_miss(best: dict, causes: list[dict], cases: dict[str, Case]) -> dict[str, Any] | None:
    """What would confirm or rule out the runner-up: its strongest signature that did not match, and a
    signature that argues against it."""
    runner = next((m for m in causes if m["slug"] != best["slug"]), None)
    if runner is None:
        return None
    case = cases.get(runner["slug"])
    seen = {s["id"] for s in runner["signals"]}
    confirm = rule_out = ""
    if case is not None:
        missing = sorted(
            (s for s in case.signatures if s.get("id") not in seen and s.get("weight", 0) > 0),
            key=lambda s: (not s.get("anchor"), -s.get("weight", 0)),
        )
        against = sorted(
            (s for s in case.signatures + list(case.conditions or []) if s.get("weight", 0) < 0 and s.get("id") not in seen),
            key=lambda s: s.get("weight", 0),
        )
        confirm = missing[0]["description"] if missing else ""
        rule_out = against[0].get("description", "") if against else ""
    return {
        "slug": runner["slug"],
        "title": runner["title"],
        "percent": round(runner["confidence"] * 100),
        "url": runner["url"],
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


def _rank_groups_snapshot(where: dict[str, Any], cases: dict[str, Case]) -> dict[str, Any]:
    """Where every rank is, as the page shows it: each group with its place, the odd flag, and a link to the
    case and fix step its evidence supports (rank lists kept as their short labels, so a 4096-rank job stays small)."""
    groups = []
    for group in where["groups"]:
        case = cases.get(group["case"]) if group["case"] else None
        titles = {s["id"]: s["title"] for s in case.sections} if case else {}
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
                "case_title": case.title if case else "",
                "because": group["because"] or "",
                "fix_url": case_url(case.slug, group["fix_step"]) if case else "",
                "fix_title": titles.get(group["fix_step"] or "", ""),
            }
        )
    return {
        "summary": where["summary"],
        "groups": groups,
        "silent": ranks_text(where["silent"]) if where["silent"] else "",
        "missing": ranks_text(where["missing"]) if where["missing"] else "",
    }


def _verdict_snapshot(verdict) -> dict[str, Any]:
    """What "Where is every rank" shows beside the groups: the watchdog verdict in a sentence, and its per-rank
    table."""
    agree = len([g for g in verdict.groups if g["state"] != "silent"]) == 1 and not verdict.silent
    return {
        "summary": verdict.summary,
        "agree": agree,
        "behind": list(verdict.behind),
        "silent": list(verdict.silent),
        "table": [dict(row) for row in verdict.table],
        "table_total": verdict.table_total,
    }


def _cut(text: str, start: int, end: int) -> SafeString:
    """The part of a long line around its highlight, escaped and marked."""
    if not 0 <= start < end <= len(text):
        start = end = 0
    if len(text) <= CUT_WIDTH:
        return marked_line(text, start, end)
    if end <= start:
        return mark_safe(escape(text[:CUT_WIDTH]) + "…")
    room = max(CUT_WIDTH - (end - start), 40)
    left = max(0, start - room // 3)
    right = min(len(text), end + room - (start - left))
    hit_end = min(end, start + CUT_WIDTH)
    html = ("…" if left > 0 else "") + escape(text[left:start]) + "<mark>" + escape(text[start:hit_end]) + "</mark>"
    html += ("…" if hit_end < end else escape(text[end:right])) + ("…" if right < len(text) and hit_end >= end else "")
    return mark_safe(html)  # noqa: S308 - every part escaped above


def snapshot_view(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The template's view of a snapshot: evidence escaped, cut and marked; best answer, guide, others."""
    matches = []
    for m in snapshot.get("matches", []):
        view = dict(m)
        view["percent"] = round(m["confidence"] * 100)
        view["confident"] = m["confidence"] >= CONFIDENT
        view["fix_url"] = f"{m['url']}#{m['fix_step'] or 'fix'}"
        positive = [s for s in m["signals"] if s["weight"] > 0]
        view["why"] = positive[0]["description"] if positive else ""
        view["weighted"] = [s for s in m["signals"] if s["weight"]]  # what the confidence is made of
        view["evidence"] = []
        for row in m.get("evidence", []):
            start, end = (row.get("span") or [0, 0])[:2]
            text = row["text"]
            view["evidence"].append(
                {
                    **row,
                    "cut": _cut(text, start, end),
                    "html": marked_line(text, start, end),
                    "long": len(text) > CUT_WIDTH or bool(row.get("context")),
                }
            )
        matches.append(view)
    causes = [m for m in matches if m["kind"] == "cause"]
    best = causes[0] if causes and causes[0]["confident"] else None
    guide = next((m for m in matches if m["kind"] == "guide"), None)
    harmless = snapshot.get("harmless", [])
    any_confident = any(m["confident"] for m in causes)
    where = snapshot.get("rank_groups")
    return {
        # the answer box's one line on where the ranks are, when some rank is not where the others are
        "where_line": where["summary"] if where and any(g["odd"] for g in where["groups"]) else "",
        "matches": matches,
        "causes": causes,
        "best": best,
        "guide": guide,
        "near_miss": snapshot.get("near_miss"),
        "failure": snapshot.get("failure"),
        "harmless": harmless,
        "only_harmless": bool(harmless) and not any_confident,
        "repairs": snapshot.get("repairs", []),
        "any_confident": any_confident,
        "facts": snapshot.get("facts", []),
        "verdict": snapshot.get("verdict"),
        "rank_groups": snapshot.get("rank_groups"),
        "timeouts": snapshot.get("timeouts"),
        "notes": snapshot.get("notes", []),
        "stats": snapshot.get("stats", {}),
        "hits": snapshot.get("hits", []),
        "wizard_url": snapshot.get("wizard_url", ""),
        "capture_url": snapshot.get("capture_url", ""),
    }


def snapshot_markdown(snapshot: dict[str, Any], url: str = "") -> str:
    """A short summary for a ticket: the answer, the step, the odd ranks, the evidence lines."""
    view = snapshot_view(snapshot)
    out = ["## Hang Doctor diagnosis" + (f": {url}" if url else ""), ""]
    best = view["best"]
    if best:
        out.append(f"**Most likely cause:** [{best['title']}]({best['url']}) ({best['percent']}% confidence)")
        if best["why"]:
            out.append(f"**Why:** {best['why']}")
        step = f" ({best['fix_title']})" if best.get("fix_title") else ""
        out.append(f"**Do this first:** {best['fix_url']}{step}")
    elif view["guide"]:
        out.append(f"**No known cause with confidence.** Next step: [{view['guide']['title']}]({view['guide']['fix_url']})")
    else:
        out.append("**No known case explains this log.**")
    # Text read from the log goes only in code spans and fences (kb/reports/markdown_safe.py): never a live link.
    if view["failure"]:
        out.append(f"**First failure:** {code_span(view['failure'])}")
    if view["verdict"]:
        out += ["", f"**Ranks:** {code_span(view['verdict']['summary'])}"]
    if view["timeouts"]:
        out += ["", f"**Timeouts:** {code_span(view['timeouts']['summary'])}"]
        out += [f"- {code_span(note)}" for note in view["timeouts"]["notes"]]
    if best and best["evidence"]:
        out += ["", "Evidence:", ""]
        out.append(
            fenced(
                [f"{(r['source'] + ':') if r.get('source') else ''}{r['line']}: {r['text'][:300]}" for r in best["evidence"][:6]]
            )
        )
    others = [m for m in view["causes"] if m is not best][:3]
    if others:
        out += ["", "Other cases: " + "; ".join(f"[{m['title']}]({m['url']}) {m['percent']}%" for m in others)]
    return "\n".join(out) + "\n"

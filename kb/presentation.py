"""Shape a diagnosis for templates: evidence escaped first, then the matched part wrapped in <mark>."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from kb.diagnosis.engine import CONFIDENT, Diagnosis
from kb.diagnosis.verdict import failure_text
from kb.diagnosis.versions import versions_text
from kb.models import Case

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
    "stages_done": "Stages completed",
    "silent_ranks": "Silent ranks",
    "behind_ranks": "Ranks behind",
    "ranks_disagree": "Ranks disagree (desync)",
    "first_collective": "Stuck in the first collective",
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


@dataclass
class MatchView:
    slug: str
    title: str
    summary: str
    confidence: float
    confident: bool
    percent: int
    evidence: list[dict[str, Any]]
    signals: list[dict[str, Any]]
    kind: str = "cause"
    fix_url: str = ""
    why: str = ""


def body_with_step_versions(body_html: str, steps: list[dict]) -> SafeString:
    """The case body with each fix step's version range shown in its heading ("PyTorch < 2.14 only"), from
    the front matter's `steps`, so a reader sees at once which steps hold for their releases."""
    html = body_html
    for step in steps:
        if not step.get("versions"):
            continue
        badge = f' <span class="step-versions">{escape(versions_text(step["versions"]))} only</span>'
        html = re.sub(rf'(<h3 id="{re.escape(step["anchor"])}">.*?)(<a class="headerlink"|</h3>)',
                      lambda m: m.group(1) + badge + m.group(2), html, count=1)
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


def diagnosis_view_model(diagnosis: Diagnosis) -> dict[str, Any]:
    cases = {c.slug: c for c in Case.objects.filter(slug__in=[m.slug for m in diagnosis.matches])}
    matches = []
    for match in diagnosis.matches:
        case = cases.get(match.slug)
        if case is None:
            continue
        evidence = [{"line": e.line, "source": e.source, "signal": e.signal, "html": marked_line(e.text, *e.span)}
                    for e in match.evidence[:12]]
        url = case.get_absolute_url()
        positive = [s for s in match.signals if s["weight"] > 0]
        matches.append(MatchView(
            slug=match.slug, title=case.title, summary=case.summary, confidence=match.confidence,
            confident=match.confidence >= CONFIDENT, percent=round(match.confidence * 100),
            evidence=evidence, signals=match.signals, kind=match.kind,
            fix_url=f"{url}#{match.fix_step or 'fix'}", why=positive[0]["description"] if positive else "",
        ))
    causes = [m for m in matches if m.kind == "cause"]
    best = causes[0] if causes and causes[0].confident else None
    return {
        "matches": matches,
        "best": best,
        "guide": next((m for m in matches if m.kind == "guide"), None) if best is None else None,
        "failure": failure_text(diagnosis.failure) if diagnosis.failure else None,
        "harmless": diagnosis.harmless,
        "only_harmless": bool(diagnosis.harmless) and not any(m.confident for m in matches),
        "repairs": diagnosis.repairs,
        "any_confident": any(m.confident for m in matches),
        "facts": fact_rows(diagnosis.facts),
        "raw_facts": diagnosis.facts,
        "verdict": diagnosis.verdict,
        "stats": diagnosis.stats,
    }

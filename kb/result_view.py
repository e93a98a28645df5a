"""A Result's snapshot as the templates read it: evidence escaped first, then cut around and <mark>ed at its match.
The data (which answer is best, which lines are evidence, their context) was decided by the engine
(diagnosis/result.py); this module only escapes, cuts and marks."""

from __future__ import annotations

from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from diagnosis.engine import CONFIDENT
from diagnosis.result import answer_slugs, fix_url

CUT_WIDTH = 220  # a longer evidence line is cut around its highlight


def marked_line(text: str, start: int, end: int) -> SafeString:
    """Escape every part of an untrusted line, then mark the matched part."""
    if not 0 <= start < end <= len(text):
        return mark_safe(escape(text))
    return mark_safe(f"{escape(text[:start])}<mark>{escape(text[start:end])}</mark>{escape(text[end:])}")


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
        view["fix_url"] = fix_url(m)
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
    best_slug, guide_slug = answer_slugs(snapshot)
    best = next((m for m in matches if m["slug"] == best_slug), None)
    guide = next((m for m in matches if m["slug"] == guide_slug), None)
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
        # "No failure found" only when nothing failed: a rank's own exception is a failure, harmless lines or not
        "only_harmless": bool(harmless) and not any_confident and not snapshot.get("failure"),
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

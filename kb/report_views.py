"""Shareable reports (/d/<id>), "did this fix it?" votes and the curators' report (/curate/).

A result page carries its own snapshot, signed, in the Share form: nothing is stored until Share is
clicked, and what is stored is redacted first (kb/reports/redact.py)."""

from __future__ import annotations

import logging
import secrets
from typing import Any

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.core import signing
from django.db import InterfaceError, OperationalError, transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST, require_safe, require_http_methods

from kb.htmx import error_page, wants_fragment
from kb.models import Case, LineTemplate, Report
from kb.presentation import snapshot_markdown, snapshot_view
from kb.reports import store
from kb.reports.templates import draft_signature, interesting_templates, line_template

logger = logging.getLogger("kb.reports")
SNAPSHOT_SALT = "kb.reports.snapshot"
BALLOT_SALT = "kb.reports.ballot"
EMBED_LOG_LIMIT = 1024 * 1024  # a paste up to this size rides along in the Share form (no JavaScript needed)
UNMATCHED_SCAN_BYTES = 4 * 1024 * 1024
SESSION_TOKENS = "kb_report_tokens"  # report id -> the delete token's hash: the sharer's own reports
# The raw delete token reaches the sharer's browser only, in a signed cookie scoped to the report's page for
# a few minutes; the server keeps its hash alone (kb_report and the session table), so neither holds a token.
NEW_REPORT_COOKIE = "kb_new_report"
NEW_REPORT_COOKIE_S = 600
NEW_REPORT_SALT = "kb.reports.new-report"
SESSION_VOTED = "kb_voted"


def _ballot(case_slug: str = "", templates: list[str] | None = None) -> str:
    """Signed; compressed only when it carries templates (zlib on a case page's 80 bytes saves none and cost 5 us)."""
    payload = {"n": secrets.token_urlsafe(16), "c": case_slug, "t": templates or []}
    return signing.dumps(payload, salt=BALLOT_SALT, compress=bool(templates))


def _cases_for_select() -> list[dict[str, str]]:
    return list(Case.objects.filter(guide=False).order_by("title").values("slug", "title"))


def result_context(
    request: HttpRequest, snapshot: dict[str, Any], sources: list[tuple[str, bytes]], *, pasted: bool
) -> dict[str, Any]:
    """What a live result adds: the signed snapshot for Share, the vote ballot, and the bookkeeping of a paste
    (a count for the case that answered it, or masked templates when nothing did)."""
    best = snapshot.get("best_slug", "")
    counted = _paste_counted(snapshot, sources) if pasted else True
    evidence_templates = [line_template(row["text"]) for m in snapshot.get("matches", [])[:3] for row in m["evidence"][:4]]
    pasted_text = ""
    if len(sources) == 1 and sources[0][0] in ("pasted", "query") and len(sources[0][1]) <= EMBED_LOG_LIMIT:
        from kb.diagnosis.text import log_text
        from kb.presentation import printable

        pasted_text = printable(log_text(sources[0][1])[0])
    best_match = next((m for m in snapshot.get("matches", []) if m["slug"] == best), None)
    return {
        "counted": counted,
        "share": {
            "payload": signing.dumps(snapshot, salt=SNAPSHOT_SALT, compress=True),
            "log": pasted_text,
            "can_store_log": bool(pasted_text) or wants_fragment(request),
            "days": store.expiry_days(),
        },
        "vote": {
            "target": "result",
            "ref": best,
            "case_slug": best,
            "ballot": _ballot(best, evidence_templates),
            "next": request.get_full_path(),
            "steps": best_match["steps"] if best_match else [],
            "cases": _cases_for_select(),
        }
        if snapshot.get("matches")
        else None,
    }


def _paste_counted(snapshot: dict[str, Any], sources: list[tuple[str, bytes]]) -> bool:
    """Count the paste for the case that answered it, or keep its masked templates; False when the database
    refused the write (locked past its timeout, unreachable): the diagnosis is finished and is shown anyway."""
    best = snapshot.get("best_slug", "")
    templates: list[str] = []
    if not best and (not snapshot.get("harmless") or snapshot.get("matches")):
        for _, data in sources:
            text = data[:UNMATCHED_SCAN_BYTES].decode("utf-8", errors="replace") if isinstance(data, bytes) else data
            templates += interesting_templates(text)
    try:
        with transaction.atomic():  # a savepoint when a transaction is open already: its failure stays here
            if best:
                store.match_count(best)
            elif templates:
                store.templates_record("unmatched", templates[:80])
    except (OperationalError, InterfaceError) as error:
        logger.warning("paste not counted, the database refused the write: %s", type(error).__name__)
        return False
    return True


def case_ballot(slug: str) -> str:
    """A fresh ballot for a case page's vote form: one vote per page shown."""
    return _ballot(slug)


def case_feedback_context(case: Case, feedback: dict[str, Any], *, ballot: str, next_url: str) -> dict[str, Any]:
    """ "What readers reported" (`feedback`, as store.case_feedback counted it) and "Did this fix it?". The ballot
    and the form's return address are each request's own: holes, in a page kept by kb/page_cache.py."""
    return {
        "feedback": feedback,
        "vote": {
            "target": "case",
            "ref": case.slug,
            "case_slug": case.slug,
            "ballot": ballot,
            "next": next_url,
            "steps": case.fix_steps(),
            "cases": _cases_for_select(),
        },
    }


def wizard_vote_context(request: HttpRequest, case_slug: str, path: str) -> dict[str, Any]:
    """For a troubleshooter outcome: include "kb/report_vote.html" with this as `vote`."""
    case = Case.objects.filter(slug=case_slug).first()
    return {
        "target": "wizard",
        "ref": path[:300],
        "case_slug": case_slug,
        "ballot": _ballot(case_slug),
        "next": request.get_full_path(),
        "steps": case.fix_steps() if case else [],
        "cases": _cases_for_select(),
    }


# --- reports -----------------------------------------------------------------------------------------


@vary_on_headers("HX-Request")  # it answers htmx with a fragment, everyone else with a page
@require_POST
def report_create(request: HttpRequest) -> HttpResponse:
    """Share: check the signed snapshot, redact (and mask when asked), store, and go to /d/<id>."""
    try:
        snapshot = signing.loads(request.POST.get("payload", ""), salt=SNAPSHOT_SALT, max_age=24 * 3600)
    except signing.BadSignature:
        return error_page(
            request,
            400,
            "This result is out of date",
            "Diagnose the log again, then click Share (a result can be shared for a day after it was shown).",
        )
    log = None
    if request.POST.get("store_log") == "on":
        parts = [request.POST.get("log", "")]
        for upload in request.FILES.getlist("file")[:64]:
            if upload.size <= settings.KB_MAX_LOG_BYTES:
                parts.append(f"==> {upload.name} <==\n" + upload.read().decode("utf-8", errors="replace"))
        log = "\n".join(p for p in parts if p.strip()) or None
    report, token = store.report_create(snapshot, log=log, mask=request.POST.get("mask") == "on")
    tokens = request.session.get(SESSION_TOKENS, {})
    tokens[report.id] = store.token_hash(token)
    request.session[SESSION_TOKENS] = dict(list(tokens.items())[-50:])
    url = reverse("kb:report", args=[report.id])
    if wants_fragment(request):
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
    else:
        response = HttpResponseRedirect(url)
    response.set_cookie(
        NEW_REPORT_COOKIE,
        signing.dumps(token, salt=NEW_REPORT_SALT),
        max_age=NEW_REPORT_COOKIE_S,
        path=url,
        secure=request.is_secure(),
        httponly=True,
        samesite="Strict",
    )
    return response


def _new_report_token(request: HttpRequest, report: Report) -> str:
    """The delete token from the sharer's short-lived cookie, when it is this report's."""
    try:
        token = signing.loads(request.COOKIES.get(NEW_REPORT_COOKIE, ""), salt=NEW_REPORT_SALT, max_age=NEW_REPORT_COOKIE_S)
    except signing.BadSignature:
        return ""
    return token if isinstance(token, str) and store.token_hash(token) == report.delete_token_hash else ""


def _report_or_404(report_id: str) -> Report:
    report = store.report_live(report_id)
    if report is None:
        raise Http404("This report does not exist, has expired, or was deleted.")
    return report


@require_safe
def report_detail(request: HttpRequest, report_id: str) -> HttpResponse:
    report = _report_or_404(report_id)
    token = _new_report_token(request, report)
    share_url = request.build_absolute_uri(report.get_absolute_url())
    snapshot = report.data
    voted = report.votes.exists()
    best = snapshot.get("best_slug", "")
    best_match = next((m for m in snapshot.get("matches", []) if m["slug"] == best), None)
    context = {
        "report": report,
        "share_url": share_url,
        "result": snapshot_view(snapshot),
        "hits": snapshot.get("hits", []),
        "wizard_url": snapshot.get("wizard_url", ""),
        "markdown": snapshot_markdown(snapshot, share_url),
        "delete_url": (request.build_absolute_uri(reverse("kb:report_delete", args=[report.id])) + f"?token={token}")
        if token
        else "",
        "voted": voted,
        "shared_here": request.session.get(SESSION_TOKENS, {}).get(report.id) == report.delete_token_hash,
        "log_lines": report.log.count("\n") + 1 if report.log else 0,
        "vote": None
        if voted or not snapshot.get("matches")
        else {
            "target": "report",
            "ref": report.id,
            "case_slug": best,
            "ballot": "",
            "next": request.get_full_path(),
            "report_id": report.id,
            "steps": best_match["steps"] if best_match else [],
            "cases": _cases_for_select(),
        },
    }
    response = render(request, "kb/report.html", context)
    response["X-Robots-Tag"] = "noindex"
    response["Referrer-Policy"] = "same-origin"  # the URL is the secret: never sent to other sites
    return response


@require_safe
def report_markdown(request: HttpRequest, report_id: str) -> HttpResponse:
    report = _report_or_404(report_id)
    body = snapshot_markdown(report.data, request.build_absolute_uri(report.get_absolute_url()))
    response = HttpResponse(body, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'inline; filename="diagnosis-{report.id[:8]}.md"'
    response["X-Robots-Tag"] = "noindex"
    return response


@require_safe
def report_log(request: HttpRequest, report_id: str) -> HttpResponse:
    report = _report_or_404(report_id)
    if not report.log:
        raise Http404("This report was shared without its log.")
    response = HttpResponse(report.log, content_type="text/plain; charset=utf-8")
    response["X-Content-Type-Options"] = "nosniff"
    response["X-Robots-Tag"] = "noindex"
    return response


@require_http_methods(["GET", "POST"])
def report_delete(request: HttpRequest, report_id: str) -> HttpResponse:
    """GET: a confirmation form (the token comes from the creator's delete link). POST: delete, if the token is right."""
    report = _report_or_404(report_id)
    token = request.POST.get("token", "") if request.method == "POST" else request.GET.get("token", "")
    if request.method == "GET":
        return render(request, "kb/report_delete.html", {"report": report, "token": token})
    if not store.report_delete(report, token):
        return error_page(request, 403, "Not deleted", "Only the delete link given to whoever shared this report can delete it.")
    tokens = request.session.get(SESSION_TOKENS, {})
    tokens.pop(report_id, None)
    request.session[SESSION_TOKENS] = tokens
    return error_page(request, 200, "Report deleted", "The report and everything stored with it are gone.")


# --- votes -------------------------------------------------------------------------------------------


@vary_on_headers("HX-Request")  # it answers htmx with a fragment, everyone else with a page
@require_POST
def vote(request: HttpRequest) -> HttpResponse:
    """ "Did this fix it?": stores the answer, the case, the step; never log text. One vote per report and per
    shown result (the ballot), and one per page in a browser session."""
    target = request.POST.get("target", "")
    answer = request.POST.get("answer", "")
    report = None
    templates: list[str] = []
    case_slug = ""
    ref = request.POST.get("ref", "")[:300]
    if target == "report":
        report = _report_or_404(request.POST.get("report", ""))
        ballot = f"report:{report.id}"
        case_slug = report.best_slug
        ref = report.id
        templates = [line_template(r["text"]) for m in report.data.get("matches", [])[:3] for r in m["evidence"][:4]]
    else:
        try:
            signed = signing.loads(request.POST.get("ballot", ""), salt=BALLOT_SALT, max_age=7 * 24 * 3600)
        except signing.BadSignature:
            return error_page(request, 400, "Vote not counted", "This form is out of date: reload the page and vote again.")
        ballot = f"{target}:{signed['n']}"
        case_slug = signed.get("c", "")
        templates = signed.get("t", [])
    voted = request.session.get(SESSION_VOTED, [])
    key = f"{target}:{ref}"
    if target in ("case", "wizard") and key in voted:
        return error_page(request, 409, "Already counted", "Your vote on this page was already counted. Thank you.")
    other = request.POST.get("other_case", "")
    if other and not Case.objects.filter(slug=other).exists():
        other = ""
    step = request.POST.get("step", "")
    try:
        store.vote_record(
            target=target,
            answer=answer,
            ballot=ballot,
            case_slug=case_slug,
            target_ref=ref,
            other_case=other,
            step=step if step.startswith("fix") else "",
            report=report,
        )
    except store.VoteRefused as err:
        return error_page(request, 409 if "already" in str(err) else 400, "Vote not counted", str(err))
    if answer in ("no", "other") and templates:
        store.templates_record("voted-wrong", templates[:20])
    request.session[SESSION_VOTED] = (voted + [key])[-200:]
    back = request.POST.get("next", "")
    if wants_fragment(request):
        return render(request, "kb/report_vote_done.html", {"answer": answer})
    if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        return HttpResponseRedirect(back)
    return error_page(request, 200, "Thank you", "Your answer was counted.")


# --- the curators' report ----------------------------------------------------------------------------


@staff_member_required
@require_safe
def curate(request: HttpRequest) -> HttpResponse:
    """Line templates nothing explained, or that readers said were explained wrongly, clustered, with counts,
    last-seen dates and a draft signature each."""
    origin = request.GET.get("origin", "")
    rows = LineTemplate.objects.all()
    if origin in dict(LineTemplate.ORIGINS):
        rows = rows.filter(origin=origin)
    clusters = [{"row": row, "draft": draft_signature(row.template, row.example)} for row in rows[:200]]
    from kb.models import Vote

    context = {
        "clusters": clusters,
        "origin": origin,
        "origins": LineTemplate.ORIGINS,
        "wrong_votes": Vote.objects.filter(answer__in=["no", "other"]).count(),
        "total": LineTemplate.objects.count(),
    }
    return render(request, "kb/curate.html", context)

"""Shareable reports (/d/<id>), "did this fix it?" votes and the curators' report (/curate/).

A result page carries its own snapshot, signed, in the Share form: nothing is stored until Share is
clicked, and what is stored is redacted first (kb/reports/redact.py)."""

from __future__ import annotations

import contextlib
import functools
import logging
import secrets
from typing import Any, Callable

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.core import signing
from django.db import InterfaceError, OperationalError, transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST, require_safe, require_http_methods

from diagnosis.result import Result, snapshot_markdown
from kb.diagnose import served_current
from kb.htmx import error_page, page_or_fragment, wants_fragment
from kb.models import Case, LineTemplate, Report, Vote
from kb.result_view import snapshot_view
from kb.reports import store
from kb.reports.log_view import (
    FOUND_LIMIT,
    PAGE_LINES,
    LogLine,
    log_anchors,
    log_found,
    log_lines,
    log_marked,
    log_page,
    log_page_of,
)
from kb.reports.templates import draft_signature, line_template, unexplained_templates
from kb.reports.voters import VOTER_COOKIE, address_hash, voter_cookie_set, voter_cookie_value, voter_hash

logger = logging.getLogger("kb.reports")
SNAPSHOT_SALT = "kb.reports.snapshot"
BALLOT_SALT = "kb.reports.ballot"
EMBED_LOG_LIMIT = 1024 * 1024  # a paste up to this size rides along in the Share form (no JavaScript needed)
UNMATCHED_SCAN_CHARS = 4 * 1024 * 1024  # of each log, for the curators' templates
SESSION_TOKENS = "kb_report_tokens"  # report id -> the delete token's hash: the sharer's own reports
# The raw delete token reaches the sharer's browser only, in a signed cookie scoped to the report's page for
# a few minutes; the server keeps its hash alone (kb_report and the session table), so neither holds a token.
NEW_REPORT_COOKIE = "kb_new_report"
NEW_REPORT_COOKIE_S = 600
NEW_REPORT_SALT = "kb.reports.new-report"
BALLOT_KINDS = ("case", "result", "wizard")  # a report has no ballot: one vote per voter on the report itself


def _ballot(kind: str, case_slug: str = "", templates: list[str] | None = None, ref: str = "") -> str:
    """A signed, single-use ballot that names its kind (case page, result, troubleshooter outcome) and its case, so
    a form cannot send it as another kind. Compressed only when it carries templates (zlib on a case page's 80 bytes
    saves none and cost 5 us)."""
    payload = {"n": secrets.token_urlsafe(16), "k": kind, "c": case_slug, "t": templates or [], "r": ref}
    return signing.dumps(payload, salt=BALLOT_SALT, compress=bool(templates))


def _cases_for_select() -> list[dict[str, str]]:
    """The vote form's cases on the report, troubleshooter and curators' pages. A paste's form takes the same cases
    from the served catalog (`Served.cases_to_name`), a case page's from the read its links make (`cases_brief`)."""
    return list(Case.objects.filter(guide=False).order_by("title").values("slug", "title"))


def vote_form(
    target: str,
    ref: str,
    case_slug: str,
    *,
    ballot: str,
    next_url: str,
    steps: list[dict[str, Any]],
    cases: list[dict[str, str]],
    report_id: str = "",
) -> dict[str, Any]:
    """What "kb/report_vote.html" needs, for whichever page asks "Did this fix it?" (a result, a case, a troubleshooter
    outcome, a shared report): the thing voted on, the case it is about, the ballot, where to come back to, the case's
    steps and the other cases to name. A dict, because a kept case page fills its ballot and `next` per request."""
    return {
        "target": target,
        "ref": ref,
        "case_slug": case_slug,
        "ballot": ballot,
        "next": next_url,
        "report_id": report_id,
        "steps": steps,
        "cases": cases,
    }


def result_context(
    request: HttpRequest,
    snapshot: dict[str, Any],
    result: Result,
    logs: list[tuple[str, bytes]],
    *,
    pasted: bool,
    revision: str,
) -> dict[str, Any]:
    """What a live result adds: the signed snapshot for Share, the vote ballot, and the bookkeeping of a paste
    (a count for the case that answered it, or masked templates when nothing did). `revision`: the served revision
    the result was diagnosed with, whose cases the vote form offers."""
    best = snapshot.get("best_slug", "")
    counted = _paste_counted(snapshot, result) if pasted else True
    evidence_templates = [line_template(row["text"]) for m in snapshot.get("matches", [])[:3] for row in m["evidence"][:4]]
    pasted_text = ""
    if len(logs) == 1 and logs[0][0] in ("pasted", "query") and len(logs[0][1]) <= EMBED_LOG_LIMIT and result.texts:
        pasted_text = result.texts.text()
    best_match = next((m for m in snapshot.get("matches", []) if m["slug"] == best), None)
    return {
        "counted": counted,
        "share": {
            "payload": signing.dumps(snapshot, salt=SNAPSHOT_SALT, compress=True),
            "log": pasted_text,
            "can_store_log": bool(pasted_text) or wants_fragment(request),
            "days": store.expiry_days(),
        },
        "vote": vote_form(
            "result",
            best,
            best,
            ballot=_ballot("result", best, evidence_templates),
            next_url=request.get_full_path(),
            steps=best_match["steps"] if best_match else [],
            cases=served_current(revision).cases_to_name,
        )
        if snapshot.get("matches")
        else None,
    }


def _paste_counted(snapshot: dict[str, Any], result: Result) -> bool:
    """Count the paste for the case that answered it, or keep its masked templates, and the lines a catalogued
    program printed that its catalogue does not know (the catalogue's gaps); False when the database refused the
    write (locked past its timeout, unreachable): the diagnosis is finished and is shown anyway."""
    best = snapshot.get("best_slug", "")
    # Lines nothing explained: as the diagnosis read them (wrapped lines re-joined), less every match's evidence
    # (the triage guide's too) and the known-harmless lines.
    templates = [] if best else unexplained_templates(result, scan_chars=UNMATCHED_SCAN_CHARS)
    gaps = [line_template(text) for _, _, text in result.diagnosis.unrecognised]
    writes: list[Callable[[], object]] = []
    if best:
        writes.append(functools.partial(store.match_count, best))  # one statement
    elif templates:
        writes.append(functools.partial(store.templates_record, "unmatched", templates))  # one transaction of its own
    if gaps:
        writes.append(functools.partial(store.templates_record, "unrecognised", gaps))
    try:
        # One write is its own transaction (the site runs in autocommit); several are made all or none.
        with transaction.atomic() if len(writes) > 1 else contextlib.nullcontext():
            for write in writes:
                write()
    except (OperationalError, InterfaceError) as error:
        logger.warning("paste not counted, the database refused the write: %s", type(error).__name__)
        return False
    return True


def case_ballot(slug: str) -> str:
    """A fresh ballot for a case page's vote form: one vote per page shown."""
    return _ballot("case", slug)


def case_feedback_context(
    case: Case, feedback: dict[str, Any], *, others: list[Case], ballot: str, next_url: str
) -> dict[str, Any]:
    """ "What readers reported" (`feedback`, as store.case_feedback counted it) and "Did this fix it?", whose list of
    cases is `others` (kb.selectors.cases_brief, read for the page's links already) less the triage guides. The ballot
    and the form's return address are each request's own: holes, in a page kept by kb/page_cache.py."""
    titles = {step["id"]: step["title"] for step in case.fix_steps()}
    return {
        "feedback": {**feedback, "steps": _steps_titled(feedback["steps"], titles)},
        "vote": vote_form(
            "case",
            case.slug,
            case.slug,
            ballot=ballot,
            next_url=next_url,
            steps=case.fix_steps(),
            cases=[{"slug": other.slug, "title": other.title} for other in others if not other.guide],
        ),
    }


def _steps_titled(steps: list[dict[str, Any]], titles: dict[str, str]) -> list[dict[str, Any]]:
    """A tally's steps with the titles readers know them by (`fix-1` is an anchor, not a name)."""
    return [{**step, "title": titles.get(step["step"], step["step"])} for step in steps]


def wizard_vote_context(request: HttpRequest, case_slug: str, path: str) -> dict[str, Any]:
    """For a troubleshooter outcome: include "kb/report_vote.html" with this as `vote`."""
    case = Case.objects.filter(slug=case_slug).first()
    return vote_form(
        "wizard",
        path[:300],
        case_slug,
        ballot=_ballot("wizard", case_slug, ref=path[:300]),
        next_url=request.get_full_path(),
        steps=case.fix_steps() if case else [],
        cases=_cases_for_select(),
    )


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


def site_404(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A report that expired, was deleted or never existed answers the site's own 404 page, with DEBUG on too
    (`make run`), where a raised Http404 would show Django's technical page."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except Http404 as err:
            from kb.views import not_found  # kb.views imports this module

            return not_found(request, err)

    return wrapped


def _report_or_404(report_id: str) -> Report:
    report = store.report_live(report_id)
    if report is None:
        raise Http404("This report does not exist, has expired, or was deleted.")
    return report


@site_404
@require_safe
def report_detail(request: HttpRequest, report_id: str) -> HttpResponse:
    report = _report_or_404(report_id)
    token = _new_report_token(request, report)
    share_url = request.build_absolute_uri(report.get_absolute_url())
    snapshot = report.data
    best = snapshot.get("best_slug", "")
    best_match = next((m for m in snapshot.get("matches", []) if m["slug"] == best), None)
    titles = {step["id"]: step["title"] for step in (best_match["steps"] if best_match else [])}
    own_vote = _own_vote(request, "report", report.id)
    tally = store.vote_tally(report.votes.all())
    result = snapshot_view(snapshot)
    if report.log:
        _evidence_linked_to_log(result, report)
    context = {
        "report": report,
        "share_url": share_url,
        "result": result,
        "hits": snapshot.get("hits", []),
        "wizard_url": snapshot.get("wizard_url", ""),
        "markdown": snapshot_markdown(snapshot, share_url, origin=_origin(request)),
        "delete_url": (request.build_absolute_uri(reverse("kb:report_delete", args=[report.id])) + f"?token={token}")
        if token
        else "",
        "own_vote": _vote_said(own_vote, titles) if own_vote else None,
        "tally": {**tally, "steps": _steps_titled(tally["steps"], titles)},
        "shared_here": request.session.get(SESSION_TOKENS, {}).get(report.id) == report.delete_token_hash,
        "log_lines": report.log.count("\n") + 1 if report.log else 0,
        "vote": None
        if own_vote or not snapshot.get("matches")
        else vote_form(
            "report",
            report.id,
            best,
            ballot="",
            next_url=request.get_full_path(),
            steps=best_match["steps"] if best_match else [],
            cases=_cases_for_select(),
            report_id=report.id,
        ),
    }
    response = render(request, "kb/report.html", context)
    response["X-Robots-Tag"] = "noindex"
    response["Referrer-Policy"] = "same-origin"  # the URL is the secret: never sent to other sites
    return response


def _report_sources(snapshot: dict[str, Any]) -> set[str]:
    """The files the diagnosis read, as its evidence names them (a paste has none)."""
    rows = [row for m in snapshot.get("matches", []) for row in m.get("evidence", [])] + snapshot.get("harmless", [])
    return {row["source"] for row in rows if row.get("source")}


def _log_line_url(report: Report, line: LogLine) -> str:
    page = log_page_of(line)
    return reverse("kb:report_log_page", args=[report.id]) + (f"?page={page}" if page > 1 else "") + f"#{line.anchor}"


def _evidence_linked_to_log(result: dict[str, Any], report: Report) -> None:
    """Each evidence row, and each line of its context, links to its line in the stored log's view (`#L123`)."""
    anchors = log_anchors(log_lines(report.log, _report_sources(report.data)))
    for match in result["matches"]:
        for row in match["evidence"]:
            source = row.get("source") or ""
            line = anchors.get((source, row["line"]))
            row["log_url"] = _log_line_url(report, line) if line else ""
            row["context"] = [
                {**c, "log_url": _log_line_url(report, anchors[(source, c["line"])]) if (source, c["line"]) in anchors else ""}
                for c in row.get("context") or []
            ]


@site_404
@require_safe
def report_log_page(request: HttpRequest, report_id: str) -> HttpResponse:
    """The stored log, one numbered line each that a link can point at (`#L123`), a page of PAGE_LINES at a time;
    `?q=` shows only the lines that contain the words, each linking to its place (a GET form: no JavaScript)."""
    report = _report_or_404(report_id)
    if not report.log:
        raise Http404("This report was shared without its log.")
    lines = log_lines(report.log, _report_sources(report.data))
    query = request.GET.get("q", "").replace("\x00", "").strip()[:200]
    try:
        page = max(1, int(request.GET.get("page", "1")))
    except ValueError:
        page = 1
    pages = max(1, -(-len(lines) // PAGE_LINES))
    if query:
        shown, found = log_found(lines, query)
        rows = [{"line": line, "url": _log_line_url(report, line), "pieces": log_marked(line.text, query)} for line in shown]
    else:
        found = 0
        rows = [
            {"line": line, "url": f"#{line.anchor}", "pieces": [(line.text, False)]} for line in log_page(lines, min(page, pages))
        ]
    context = {
        "report": report,
        "log_query": query,  # not `query`: base.html puts that in the site's search box
        "rows": rows,
        "found": found,
        "found_limit": FOUND_LIMIT,
        "page": min(page, pages),
        "pages": pages,
        "total": sum(1 for line in lines if line.number),
    }
    response = render(request, "kb/report_log.html", context)
    response["X-Robots-Tag"] = "noindex"
    response["Referrer-Policy"] = "same-origin"
    return response


def _origin(request: HttpRequest) -> str:
    """This site's scheme and host as the reader reached it, for links that must work pasted elsewhere."""
    return request.build_absolute_uri("/").rstrip("/")


@site_404
@require_safe
def report_markdown(request: HttpRequest, report_id: str) -> HttpResponse:
    report = _report_or_404(report_id)
    body = snapshot_markdown(report.data, request.build_absolute_uri(report.get_absolute_url()), origin=_origin(request))
    response = HttpResponse(body, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'inline; filename="diagnosis-{report.id[:8]}.md"'
    response["X-Robots-Tag"] = "noindex"
    return response


@site_404
@require_safe
def report_log(request: HttpRequest, report_id: str) -> HttpResponse:
    report = _report_or_404(report_id)
    if not report.log:
        raise Http404("This report was shared without its log.")
    response = HttpResponse(report.log, content_type="text/plain; charset=utf-8")
    response["X-Content-Type-Options"] = "nosniff"
    response["X-Robots-Tag"] = "noindex"
    return response


@site_404
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


def _posted(request: HttpRequest, name: str, limit: int) -> str:
    """A form field as text a database keeps: NUL (which PostgreSQL refuses) dropped, cut to the column."""
    return request.POST.get(name, "").replace("\x00", "")[:limit]


def _own_vote(request: HttpRequest, target: str, item: str) -> Vote | None:
    """What this browser already answered about `item`, if its voter cookie says it voted."""
    if VOTER_COOKIE not in request.COOKIES:
        return None
    voter = voter_hash(voter_cookie_value(request))
    return Vote.objects.filter(voter=voter, target=target, item=item).first()


def _vote_said(vote: Vote, titles: dict[str, str]) -> dict[str, Any]:
    """A vote as its voter is told it back: the answer, the step by its title, the case by its title, when."""
    other = Case.objects.filter(slug=vote.other_case).values_list("title", flat=True).first() if vote.other_case else ""
    return {"answer": vote.answer, "step": titles.get(vote.step, vote.step), "other_case": other, "at": vote.created_at}


def _step_titles(case_slug: str) -> dict[str, str]:
    case = Case.objects.filter(slug=case_slug).first() if case_slug else None
    return {step["id"]: step["title"] for step in case.fix_steps()} if case else {}


@site_404
@vary_on_headers("HX-Request")  # it answers htmx with a fragment, everyone else with a page
@require_POST
def vote(request: HttpRequest) -> HttpResponse:
    """ "Did this fix it?": stores the answer, the case, the step; never log text. Each browser (a voter cookie)
    answers once per item and kind: a shared report, or a case through its page, a result or a troubleshooter
    outcome; a signed ballot counts once; one address counts a few times per item however often its cookies are
    cleared, but a report's sharer always can (kb/reports/store.py). A second answer is told the first one."""
    target = _posted(request, "target", 10)
    answer = _posted(request, "answer", 8)
    report = None
    templates: list[str] = []
    address_cap: int | None = store.VOTES_PER_ADDRESS_PER_ITEM
    if target == "report":
        report = _report_or_404(_posted(request, "report", 64))
        ballot = f"report:{secrets.token_urlsafe(16)}"  # no ballot: the voter, once per report, is the limit
        case_slug, item, ref = report.best_slug, report.id, report.id
        templates = [line_template(r["text"]) for m in report.data.get("matches", [])[:3] for r in m["evidence"][:4]]
        if report.id in request.session.get(SESSION_TOKENS, {}):
            address_cap = None  # the sharer: strangers from the same network never block their answer
    else:
        try:
            signed = signing.loads(request.POST.get("ballot", ""), salt=BALLOT_SALT, max_age=7 * 24 * 3600)
        except signing.BadSignature:
            signed = {}
        if signed.get("k") not in BALLOT_KINDS:  # forged, expired, or signed before ballots named their kind
            return error_page(request, 400, "Vote not counted", "This form is out of date: reload the page and vote again.")
        target, case_slug = signed["k"], signed.get("c", "")
        ballot = f"ballot:{signed['n']}"
        item = case_slug or ballot
        ref = signed.get("r") or case_slug
        templates = signed.get("t", [])
    other = _posted(request, "other_case", 100)
    if other and not Case.objects.filter(slug=other).exists():
        other = ""
    step = _posted(request, "step", 40)
    cookie = voter_cookie_value(request)
    titles = _step_titles(case_slug)
    try:
        counted = store.vote_record(
            target=target,
            answer=answer,
            ballot=ballot,
            case_slug=case_slug,
            target_ref=ref,
            other_case=other,
            step=step if step.startswith("fix") else "",
            report=report,
            voter=voter_hash(cookie),
            address=address_hash(request),
            item=item,
            address_cap=address_cap,
        )
    except store.VoteAlreadyCounted as err:
        response = _vote_answered(request, _vote_said(err.vote, titles), already=True)
        voter_cookie_set(request, response, cookie)
        return response
    except store.VoteRefused as err:
        return error_page(request, err.status, "Vote not counted", str(err))
    if answer in ("no", "other") and templates:
        store.templates_record("voted-wrong", templates[:20])
    back = request.POST.get("next", "")
    if not wants_fragment(request) and back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        response: HttpResponse = HttpResponseRedirect(back)
    else:
        response = _vote_answered(request, _vote_said(counted, titles), already=False)
    voter_cookie_set(request, response, cookie)
    return response


def _vote_answered(request: HttpRequest, said: dict[str, Any], *, already: bool) -> HttpResponse:
    """The answer as counted (200), or the earlier answer that stands (409), as the page (with a way back to the
    page voted from) or the vote's fragment."""
    back = request.POST.get("next", "")
    safe = back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()})
    return page_or_fragment(
        request,
        "kb/report_vote_page.html",
        "kb/report_vote_done.html",
        {"said": said, "already": already, "back": back if safe else ""},
        status=409 if already else 200,
    )


# --- the curators' report ----------------------------------------------------------------------------


@staff_member_required
@require_safe
def curate(request: HttpRequest) -> HttpResponse:
    """Line templates nothing explained, or that readers said were explained wrongly, clustered, with the pastes and
    lines counted, last-seen dates, a draft signature each, and a curator's two answers: Dismiss, This is case X.
    A dismissed cluster is listed again once it has twice the pastes it had when dismissed (`?show=dismissed`
    lists the hidden ones)."""
    origin = request.GET.get("origin", "")
    show_dismissed = request.GET.get("show") == "dismissed"
    rows = LineTemplate.objects.all()
    if origin in dict(LineTemplate.ORIGINS):
        rows = rows.filter(origin=origin)
    shown = [row for row in rows[:1000] if row.dismissed == show_dismissed][:200]
    context = {
        "clusters": [_cluster_context(row) for row in shown],
        "cases": _cases_for_select(),
        "origin": origin,
        "show_dismissed": show_dismissed,
        "origins": LineTemplate.ORIGINS,
        "wrong_votes": Vote.objects.filter(answer__in=["no", "other"]).count(),
        "total": LineTemplate.objects.count(),
    }
    return render(request, "kb/curate.html", context)


def _cluster_context(row: LineTemplate) -> dict[str, Any]:
    case = Case.objects.filter(slug=row.case_slug).values("slug", "title").first() if row.case_slug else None
    return {"row": row, "draft": draft_signature(row.template, row.example), "case": case}


@staff_member_required
@require_POST
@vary_on_headers("HX-Request")
def curate_cluster(request: HttpRequest, cluster_id: int) -> HttpResponse:
    """A curator's answer on one cluster: `dismiss`, `restore`, or `link` with `case` (a case's slug; empty unlinks).
    Without JavaScript the answer redirects back to the report; htmx swaps the cluster's item in place."""
    row = LineTemplate.objects.filter(id=cluster_id).first()
    if row is None:
        raise Http404("No such cluster")
    action = request.POST.get("action", "")
    if action == "dismiss":
        row.dismissed_at, row.dismissed_pastes = timezone.now(), row.pastes
        row.save(update_fields=["dismissed_at", "dismissed_pastes"])
    elif action == "restore":
        row.dismissed_at, row.dismissed_pastes = None, 0
        row.save(update_fields=["dismissed_at", "dismissed_pastes"])
    elif action == "link":
        slug = _posted(request, "case", 100)
        if slug and not Case.objects.filter(slug=slug, guide=False).exists():
            return error_page(request, 400, "Not linked", "That is not a case of this knowledge base.")
        row.case_slug = slug
        row.save(update_fields=["case_slug"])
    else:
        return error_page(request, 400, "Nothing done", "That is not an action this form offers.")
    if not wants_fragment(request):
        return HttpResponseRedirect(reverse("kb:curate") + f"#cluster-{row.id}")
    return render(request, "kb/_curate_cluster.html", {"c": _cluster_context(row), "cases": _cases_for_select()})

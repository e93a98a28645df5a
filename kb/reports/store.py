"""Writing and reading reports, votes, match counts and line templates. No log text is ever written
unredacted; for pastes nothing explained, only templates and counts."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import os
import secrets
from collections import Counter
from typing import Any, Iterable

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from kb.models import CaseMatchDay, ContentState, LineTemplate, Report, Vote
from kb.reports import templates as tpl
from kb.reports.redact import clean_data, clean_text

DEFAULT_EXPIRY_DAYS = 30
STORED_LOG_LIMIT = 8 * 1024 * 1024  # a stored full log is cut here (the paste limit is larger)


def expiry_days() -> int:
    """`KB_REPORT_EXPIRY_DAYS` in the settings or the environment; 30 by default."""
    value = getattr(settings, "KB_REPORT_EXPIRY_DAYS", None) or os.environ.get("KB_REPORT_EXPIRY_DAYS")
    try:
        return max(1, int(value)) if value else DEFAULT_EXPIRY_DAYS
    except ValueError:
        return DEFAULT_EXPIRY_DAYS


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def report_create(snapshot: dict[str, Any], *, log: str | None = None, mask: bool = False) -> tuple[Report, str]:
    """Save a redacted (and optionally masked) copy of a result. Returns the report and the delete token,
    which only its creator is shown."""
    hosts = [str(h) for h in (snapshot.get("hosts") or [])] if mask else []
    data = clean_data({k: v for k, v in snapshot.items() if k != "hosts"}, mask=mask, hosts=hosts)
    stored_log = ""
    if log:
        stored_log = clean_text(log[:STORED_LOG_LIMIT], mask=mask, hosts=hosts)
    token = secrets.token_urlsafe(24)
    best = data.get("best_slug") or ""
    report = Report.objects.create(
        id=secrets.token_urlsafe(24),
        expires_at=timezone.now() + dt.timedelta(days=expiry_days()),
        delete_token_hash=token_hash(token),
        data=data,
        log=stored_log,
        masked=mask,
        best_slug=best[:100],
    )
    return report, token


def report_live(report_id: str) -> Report | None:
    if not report_id or len(report_id) > 64:
        return None
    return Report.objects.filter(id=report_id, expires_at__gt=timezone.now()).first()


def report_delete(report: Report, token: str) -> bool:
    """Delete when the token is the creator's (compared in constant time)."""
    if not token or not hmac.compare_digest(token_hash(token), report.delete_token_hash):
        return False
    report.delete()
    return True


def reports_purge(now: dt.datetime | None = None) -> int:
    count, _ = Report.objects.filter(expires_at__lte=now or timezone.now()).delete()
    return count


# --- votes -----------------------------------------------------------------------------------------

# Votes one client address may cast on one item of one kind, whatever its cookies: a team behind one NAT still
# votes, one person clearing cookies moves a count by this much at most. The sharer of a report is exempt.
VOTES_PER_ADDRESS_PER_ITEM = 3
# Votes counted from one address per minute (on every item): `/vote` under `make run`; nginx also limits the POSTs.
VOTES_PER_ADDRESS_PER_MINUTE = 10


class VoteRefused(Exception):
    """Not counted; `status` is the HTTP answer (400 a bad form, 409 a used ballot or a cap, 429 too many)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class VoteAlreadyCounted(VoteRefused):
    """This voter already answered this item: `vote` is what they said, shown to them again."""

    def __init__(self, vote: Vote) -> None:
        super().__init__("Your answer was already counted.", 409)
        self.vote = vote


def vote_record(
    *,
    target: str,
    answer: str,
    ballot: str,
    case_slug: str = "",
    target_ref: str = "",
    other_case: str = "",
    step: str = "",
    report: Report | None = None,
    voter: str = "",
    address: str = "",
    item: str = "",
    address_cap: int | None = VOTES_PER_ADDRESS_PER_ITEM,
) -> Vote:
    """Count one answer: once per ballot, once per voter per (target, item), at most `address_cap` times per
    address per (target, item) (None: no cap, for a report's sharer), and at most VOTES_PER_ADDRESS_PER_MINUTE
    a minute per address."""
    if target not in dict(Vote.TARGETS) or answer not in dict(Vote.ANSWERS):
        raise VoteRefused("That is not an answer this form offers.")
    if not ballot or len(ballot) > 80:
        raise VoteRefused("This form is out of date: reload the page and vote again.")
    item = item[:300]
    try:
        with transaction.atomic():
            if voter:
                earlier = Vote.objects.filter(voter=voter, target=target, item=item).first()
                if earlier is not None:
                    raise VoteAlreadyCounted(earlier)
            if address:
                same_address = Vote.objects.filter(address=address)
                recent = timezone.now() - dt.timedelta(minutes=1)
                if same_address.filter(created_at__gte=recent).count() >= VOTES_PER_ADDRESS_PER_MINUTE:
                    raise VoteRefused("Too many votes from your address in a minute. Wait a minute and try again.", 429)
                if address_cap is not None and same_address.filter(target=target, item=item).count() >= address_cap:
                    raise VoteRefused(
                        f"{address_cap} votes on this were already counted from your network: no more are counted from it.",
                        409,
                    )
            return Vote.objects.create(
                target=target,
                answer=answer,
                ballot=ballot,
                case_slug=case_slug[:100],
                target_ref=target_ref[:300],
                other_case=other_case[:100] if answer == "other" else "",
                step=step[:40] if answer == "yes" else "",
                report=report,
                voter=voter,
                address=address,
                item=item,
            )
    except IntegrityError:
        # Another request from this voter won the race, or the ballot was used already.
        earlier = Vote.objects.filter(voter=voter, target=target, item=item).first() if voter else None
        if earlier is not None:
            raise VoteAlreadyCounted(earlier) from None
        raise VoteRefused("This form was already used to vote: reload the page to vote again.", 409) from None


def vote_tally(votes: QuerySet[Vote]) -> dict[str, Any]:
    """Answers, the steps named and the distinct voters among `votes` (a queryset), as a case page counts them.
    A vote from before voters were recorded counts as a voter of its own."""
    rows = list(votes.values_list("answer", "step", "voter", "ballot"))
    answers = Counter(answer for answer, _, _, _ in rows)
    steps = Counter(step for answer, step, _, _ in rows if answer == "yes" and step)
    return {
        "yes": answers["yes"],
        "no": answers["no"],
        "other": answers["other"],
        "votes": len(rows),
        "voters": len({voter or f"ballot:{ballot}" for _, _, voter, ballot in rows}),
        "steps": [{"step": step, "n": n} for step, n in sorted(steps.items(), key=lambda item: (-item[1], item[0]))],
    }


def case_feedback(slug: str, days: int = 30) -> dict[str, Any]:
    """Honest counts for a case page: pastes it answered, and what voters said, in the last `days` days."""
    return case_page_state(slug, days)[1]


def case_page_state(slug: str, days: int = 30) -> tuple[str, dict[str, Any]]:
    """The content revision the database serves (as ContentState.loaded_revision) and `case_feedback`'s counts.

    Asked on every view of a case page, whose cached copy is keyed by both (kb/page_cache.py), so it is one plain
    SQL statement, one round trip: the three ORM queries the counts once took cost 1.0 ms, and the revision asked
    apart a second round trip (68 us both, 48 us this, on SQLite)."""
    since = timezone.now() - dt.timedelta(days=days)
    quote = connection.ops.quote_name
    votes, matches = quote(Vote._meta.db_table), quote(CaseMatchDay._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 0, '', '', SUM({quote('count')}) FROM {matches} WHERE slug = %s AND day >= %s UNION ALL "
            f"SELECT 1, answer, step, COUNT(*) FROM {votes} WHERE case_slug = %s AND created_at >= %s "
            f"GROUP BY answer, step UNION ALL "
            # distinct voters; a vote from before voters were recorded is a voter of its own
            f"SELECT 3, '', '', COUNT(DISTINCT CASE WHEN voter = '' THEN ballot ELSE voter END) FROM {votes} "
            f"WHERE case_slug = %s AND created_at >= %s UNION ALL "
            f"SELECT 2, revision, '', 0 FROM ({ContentState.revision_sql()}) AS served",
            [
                slug,
                connection.ops.adapt_datefield_value(since.date()),
                slug,
                connection.ops.adapt_datetimefield_value(since),
                slug,
                connection.ops.adapt_datetimefield_value(since),
            ],
        )
        rows = cursor.fetchall()
    revision, matched, voters, answers, steps = "", 0, 0, Counter[str](), Counter[str]()
    for kind, answer, step, n in rows:
        if kind == 2:
            revision = answer
        elif kind == 0:
            matched += n or 0  # SUM over no day is NULL
        elif kind == 3:
            voters = n
        else:
            answers[answer] += n
            if answer == "yes" and step:
                steps[step] += n
    return revision, {
        "days": days,
        "matched": matched,
        "yes": answers["yes"],
        "no": answers["no"],
        "other": answers["other"],
        "steps": [{"step": step, "n": n} for step, n in sorted(steps.items(), key=lambda item: (-item[1], item[0]))],
        "votes": sum(answers.values()),
        "voters": voters,
    }


def match_count(slug: str, day: dt.date | None = None) -> None:
    """Count one paste answered by `slug` (no text kept), in one statement: the day's row is made with 1, or, made
    already (by any worker, whatever the race), has 1 added. INSERT ... ON CONFLICT DO UPDATE: SQLite 3.24 and
    PostgreSQL 9.5 have it; the ORM's update_conflicts can only set the new row's value, not add to the old one."""
    day = day or timezone.now().date()
    quote = connection.ops.quote_name
    table, count = quote(CaseMatchDay._meta.db_table), quote("count")
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (slug, day, {count}) VALUES (%s, %s, 1) "
            f"ON CONFLICT (slug, day) DO UPDATE SET {count} = {table}.{count} + 1",
            [slug, connection.ops.adapt_datefield_value(day)],
        )


# --- the curators' report ---------------------------------------------------------------------------


def templates_record(origin: str, templates: Iterable[str]) -> int:
    """Fold one paste's line templates (one entry per line) into the stored clusters of `origin`: Drain3's tree is
    rebuilt from them (in memory, in the order they were made), each template joins its cluster or makes one, and
    every cluster the paste touched counts its lines and one paste more. Returns the lines recorded."""
    lines = Counter(templates)
    if not lines:
        return 0
    now = timezone.now()
    with transaction.atomic():
        rows = list(LineTemplate.objects.select_for_update().filter(origin=origin).order_by("id"))
        tree = tpl.drain()
        by_cluster: dict[int, LineTemplate] = {}
        for row in rows:
            cluster, _ = tree.add_log_message(row.template)
            by_cluster.setdefault(cluster.cluster_id, row)  # two stored rows Drain3 now joins: the older one grows
        touched: dict[int, LineTemplate] = {}
        for template, count in lines.items():
            cluster, _ = tree.add_log_message(template)
            row = by_cluster.get(cluster.cluster_id)
            if row is None:
                row = by_cluster[cluster.cluster_id] = LineTemplate(origin=origin, example=template, count=0, pastes=0)
            row.template = cluster.get_template()
            row.count += count
            touched[id(row)] = row
        for row in touched.values():
            tokens = row.template.split(" ")
            row.length, row.head = min(len(tokens), 32767), tokens[0][:200]
            row.pastes += 1
            row.last_seen = now
        # One statement for the clusters the paste grew and one for those it made, however many lines it had.
        LineTemplate.objects.bulk_update(
            [row for row in touched.values() if row.pk is not None],
            ["template", "count", "length", "head", "pastes", "last_seen"],
        )
        LineTemplate.objects.bulk_create([row for row in touched.values() if row.pk is None])
    return sum(lines.values())

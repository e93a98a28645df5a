"""Database rows derived from content/. Nothing here is edited by hand: `load_content` rewrites it."""

from django.db import connection, models
from django.urls import reverse


class Tag(models.Model):
    facet = models.CharField(max_length=20)  # framework | component | phase
    value = models.CharField(max_length=40)

    class Meta:
        ordering = ["facet", "value"]
        constraints = [models.UniqueConstraint(fields=["facet", "value"], name="tag_unique")]

    def __str__(self) -> str:
        return f"{self.facet}:{self.value}"


def case_url(slug: str, step: str | None = None) -> str:
    """A case page, or one of its sections (`#fix-2`): the link every answer, group and report points with."""
    url = reverse("kb:case_detail", args=[slug])
    return f"{url}#{step}" if step else url


class Case(models.Model):
    slug = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200)
    summary = models.TextField()
    tags = models.ManyToManyField(Tag, related_name="cases")
    applies_to = models.JSONField(default=list)
    symptoms = models.JSONField(default=list)
    signatures = models.JSONField(default=list)
    related = models.JSONField(default=list)  # slugs, in the author's order
    references = models.JSONField(default=list)
    sections = models.JSONField(default=list)  # [{"id", "title", "level"}] in page order
    body_html = models.TextField()  # the finished body the case page prints as it is (kb/content/rendering.py)
    last_reviewed = models.DateField()
    source_path = models.CharField(max_length=300)
    # Evidence beyond line signatures, and versions as data (content/FORMAT.md).
    conditions = models.JSONField(default=list)
    frames = models.JSONField(default=list)
    steps = models.JSONField(default=list)
    guide = models.BooleanField(default=False)
    do_first = models.JSONField(default=list)
    reviewed_against = models.JSONField(default=dict)

    class Meta:
        ordering = ["title"]

    def __str__(self) -> str:
        return self.slug

    def get_absolute_url(self) -> str:
        return case_url(self.slug)

    def fix_steps(self) -> list[dict]:
        return [s for s in self.sections if s["id"].startswith("fix-")]


class HarmlessLine(models.Model):
    """A message users paste as the cause although it is not (content/harmless/<slug>.yaml)."""

    slug = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200)
    pattern = models.TextField()
    flags = models.JSONField(default=list)
    printed_by = models.TextField()
    versions = models.JSONField(default=dict)
    why = models.TextField()
    instead = models.TextField()
    examples = models.JSONField(default=list)
    references = models.JSONField(default=list)
    source_path = models.CharField(max_length=300)

    class Meta:
        ordering = ["title"]

    def __str__(self) -> str:
        return self.slug

    def get_absolute_url(self) -> str:
        return f"{reverse('kb:harmless_list')}#{self.slug}"


class Alias(models.Model):
    """An old or alternative slug that answers 301 to its case."""

    slug = models.SlugField(max_length=100, unique=True)
    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="aliases")

    def __str__(self) -> str:
        return f"{self.slug} -> {self.case.slug}"


class ContentState(models.Model):
    """The revision of content/ the database was last loaded from (one row)."""

    revision = models.CharField(max_length=40)
    loaded_at = models.DateTimeField(auto_now=True)

    @classmethod
    def loaded_revision(cls) -> str:
        """What the site serves: one query, instead of hashing every content file per request. Asked by every
        search, so it is plain SQL: the ORM's query building cost 0.4 ms of a 0.8 ms cached search."""
        with connection.cursor() as cursor:
            cursor.execute(cls.revision_sql())
            row = cursor.fetchone()
        return row[0] if row else ""

    @classmethod
    def revision_sql(cls) -> str:
        """The query for the served revision (no row: none loaded), for a statement that asks it with other things."""
        return f"SELECT revision FROM {connection.ops.quote_name(cls._meta.db_table)} ORDER BY id LIMIT 1"


# --- Reports, votes and the curators' report (kb/reports/). Written by the site, not by load_content. ---


class Report(models.Model):
    """A diagnosis saved when its reader clicked Share: redacted before it was written, gone at `expires_at`."""

    id = models.CharField(primary_key=True, max_length=64)  # secrets.token_urlsafe(24): 192 random bits
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(db_index=True)
    delete_token_hash = models.CharField(max_length=64)  # sha256 of the creator's token; the token is not kept
    data = models.JSONField(default=dict)  # the result snapshot (diagnosis/result.py), redacted
    log = models.TextField(blank=True)  # the full log, redacted, only when the creator ticked the box
    masked = models.BooleanField(default=False)
    best_slug = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.id

    def get_absolute_url(self) -> str:
        return reverse("kb:report", args=[self.id])


class Vote(models.Model):
    """ "Did this fix it?": no log text, only what was answered about which page."""

    TARGETS = [("result", "result"), ("report", "report"), ("case", "case page"), ("wizard", "troubleshooter outcome")]
    ANSWERS = [("yes", "yes"), ("no", "no"), ("other", "it was another case")]
    target = models.CharField(max_length=10, choices=TARGETS)
    target_ref = models.CharField(max_length=300, blank=True)  # case slug, or troubleshooter path
    case_slug = models.CharField(max_length=100, blank=True, db_index=True)  # the case the page proposed
    answer = models.CharField(max_length=8, choices=ANSWERS)
    other_case = models.CharField(max_length=100, blank=True)
    step = models.CharField(max_length=40, blank=True)  # fix-N that helped
    ballot = models.CharField(max_length=80, unique=True)  # a signed ballot's nonce: each counts once, whatever the target
    report = models.ForeignKey(Report, null=True, blank=True, on_delete=models.SET_NULL, related_name="votes")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # Who voted, as keyed hashes (kb/reports/voters.py): a browser, and the client address that caps a cleared cookie.
    voter = models.CharField(max_length=64, blank=True)
    address = models.CharField(max_length=64, blank=True)
    item = models.CharField(max_length=300, blank=True)  # what one voter votes on once per target: a report, a case

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["voter", "target", "item"], condition=~models.Q(voter=""), name="vote_once_per_voter_item"
            )
        ]
        indexes = [models.Index(fields=["address", "target", "item"], name="vote_address_item")]


class CaseMatchDay(models.Model):
    """How many pastes a case was the confident answer to, per day (counts only)."""

    slug = models.CharField(max_length=100)
    day = models.DateField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["slug", "day"], name="case_match_day_unique")]


class LineTemplate(models.Model):
    """A cluster of masked, redacted log-line templates from pastes nothing explained (or voted wrong)."""

    ORIGINS = [
        ("unmatched", "matched nothing"),
        ("voted-wrong", "voted wrong"),
        ("unrecognised", "not in the message catalogue"),
    ]
    origin = models.CharField(max_length=12, choices=ORIGINS)
    template = models.TextField()
    length = models.PositiveSmallIntegerField()
    head = models.CharField(max_length=200)
    example = models.TextField(blank=True)  # the first line's template with typed placeholders
    count = models.PositiveIntegerField(default=1)  # lines
    pastes = models.PositiveIntegerField(default=1)  # pastes (or wrong votes) that brought at least one line
    first_seen = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(db_index=True)
    # A curator's answers: "not worth a case" (hidden until the cluster has twice the pastes it had then), or
    # "this is case X" (the draft goes into that case's file).
    dismissed_at = models.DateTimeField(null=True, blank=True)
    dismissed_pastes = models.PositiveIntegerField(default=0)
    case_slug = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["-pastes", "-count", "-last_seen"]
        indexes = [models.Index(fields=["origin", "length", "head"], name="line_template_key")]

    @property
    def dismissed(self) -> bool:
        """Dismissed, and not grown since to twice the pastes it had then."""
        return self.dismissed_at is not None and self.pastes < 2 * self.dismissed_pastes

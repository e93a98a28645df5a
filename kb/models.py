"""Database rows derived from content/. Nothing here is edited by hand: `load_content` rewrites it."""
from django.db import models


class Tag(models.Model):
    facet = models.CharField(max_length=20)  # framework | component | phase
    value = models.CharField(max_length=40)

    class Meta:
        ordering = ["facet", "value"]
        constraints = [models.UniqueConstraint(fields=["facet", "value"], name="tag_unique")]

    def __str__(self) -> str:
        return f"{self.facet}:{self.value}"


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
    body_html = models.TextField()
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
        return f"/kb/{self.slug}/"

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
        return f"/kb/harmless/#{self.slug}"


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
        """What the site serves: one query, instead of hashing every content file per request."""
        state = cls.objects.first()
        return state.revision if state else ""

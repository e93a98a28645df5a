"""System check: warn when the database no longer matches content/ (someone edited a file and forgot to load)."""

from django.conf import settings
from django.core.checks import Warning, register
from django.db.utils import DatabaseError

from kb.content.revision import content_revision


@register()
def content_drift_check(app_configs, **kwargs) -> list:
    from kb.models import ContentState

    try:
        state = ContentState.objects.first()
    except DatabaseError:
        return []  # not migrated yet: `migrate` will say so itself
    current = content_revision(settings.CONTENT_DIR)
    if state is None:
        return [Warning("No content has been loaded into the database.", hint="Run: python manage.py load_content", id="kb.W001")]
    if state.revision != current:
        return [
            Warning(
                f"The database holds content revision {state.revision}, but content/ is at {current}.",
                hint="Run: python manage.py load_content",
                id="kb.W002",
            )
        ]
    return []

"""System check: warn when the database no longer matches content/ (someone edited a file and forgot to load)."""

from django.conf import settings
from django.core.checks import Warning, register
from django.db.utils import DatabaseError

from kb.content.revision import LOAD_HINT, content_revision, drift_text


@register()
def content_drift_check(app_configs, **kwargs) -> list:
    from kb.models import ContentState

    try:
        state = ContentState.objects.first()
    except DatabaseError:
        return []  # not migrated yet: `migrate` will say so itself
    loaded = state.revision if state is not None else None
    message = drift_text(loaded, content_revision(settings.CONTENT_DIR))
    if message is None:
        return []
    return [Warning(message, hint=LOAD_HINT, id="kb.W001" if loaded is None else "kb.W002")]

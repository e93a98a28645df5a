"""Case.body_html now holds the finished body (permalink names and step release badges included; the case page
prints it as stored). Rows written by an older load lack both, and `load_content` skips a revision it has already
loaded, so this forgets the loaded revision: the next `load_content` (make run and make serve run it after migrate)
writes every case again."""

from django.db import migrations


def loaded_revision_forget(apps, schema_editor) -> None:
    apps.get_model("kb", "ContentState").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0006_line_template_pastes_curation"),
    ]

    operations = [
        migrations.RunPython(loaded_revision_forget, migrations.RunPython.noop),
    ]

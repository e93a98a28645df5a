"""Read-only admin: cases are edited in git (content/cases/), never here."""

from django.contrib import admin

from kb.models import Alias, Case, Tag

admin.site.site_header = "Hang Doctor administration"


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Case)
class CaseAdmin(ReadOnlyAdmin):
    list_display = ("slug", "title", "last_reviewed", "source_path")
    search_fields = ("slug", "title")
    list_filter = ("tags",)

    def changelist_view(self, request, extra_context=None):
        extra_context = {
            **(extra_context or {}),
            "title": "Cases (read-only: content is edited in git under content/cases/, then loaded with `python manage.py load_content`)",
        }
        return super().changelist_view(request, extra_context)


admin.site.register(Alias, ReadOnlyAdmin)
admin.site.register(Tag, ReadOnlyAdmin)

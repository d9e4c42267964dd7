from django.contrib import admin

from audit.models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """Read-only: entries are never added, changed or deleted by hand."""

    list_display = (
        "created_at",
        "license_id",
        "action",
        "target",
        "entity_name",
        "author_type",
        "author_email",
    )
    list_filter = ("action", "target", "author_type")
    search_fields = ("entity_name", "object_id", "author_email", "=author_id")
    date_hierarchy = "created_at"
    ordering = ("-created_at", "-id")
    readonly_fields = [field.name for field in AuditEntry._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

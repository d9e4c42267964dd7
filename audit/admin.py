"""The audit log, read-only and scoped to the admin user's licenses; the changes shown field by field."""

from django.contrib import admin
from django.utils.html import format_html, format_html_join

from accounts.admin.display import pretty_json
from accounts.admin.tenancy import ReadOnlyLicenseScopedAdmin, ScopedRelatedListFilter, admin_license_ids
from audit.models import AuditEntry
from helpdesk.api.permissions import OWNERS


class ExistingTargetListFilter(admin.SimpleListFilter):
    """The targets that have entries in the admin user's licenses, not every target the spec names."""

    title = "target"
    parameter_name = "target"

    def lookups(self, request, model_admin):
        entries = AuditEntry.objects.all()
        ids = admin_license_ids(request, OWNERS)
        if ids is not None:
            entries = entries.filter(license_id__in=ids)
        targets = entries.order_by("target").values_list("target", flat=True).distinct()
        return [(target, target) for target in targets]

    def queryset(self, request, queryset):
        return queryset.filter(target=self.value()) if self.value() else queryset


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyLicenseScopedAdmin):
    readers = OWNERS  # as /v1/auditLog
    """Entries are never added, changed or deleted by hand."""

    list_display = (
        "created_at",
        "license_id",
        "action",
        "target",
        "entity_name",
        "author_type",
        "author_email",
    )
    list_filter = ("action", ExistingTargetListFilter, "author_type", ("license", ScopedRelatedListFilter))
    search_fields = ("entity_name", "object_id", "author_email", "=author_id")
    date_hierarchy = "created_at"
    ordering = ("-created_at", "-id")
    fieldsets = (
        (None, {"fields": ("created_at", "license_id", "action", "target", "object_id", "entity_name")}),
        (
            "Author",
            {"fields": ("author_type", "author_id", "author_email", "author_ip", "author_user_agent")},
        ),
        ("Changes", {"fields": ("changes_table",)}),
        ("Chain", {"classes": ("collapse",), "fields": ("seq", "prev_hash", "hash")}),
    )
    readonly_fields = (
        *[f.name for f in AuditEntry._meta.fields if f.name != "license"],
        "license_id",
        "changes_table",
    )

    @admin.display(description="changes")
    def changes_table(self, obj):
        if not obj.changes:
            return "—"
        rows = format_html_join(
            "",
            "<tr><th>{}</th><td>{}</td><td>{}</td></tr>",
            ((name, pretty_json(change.get("before")), pretty_json(change.get("after")))
             for name, change in sorted(obj.changes.items())),
        )  # fmt: skip
        return format_html("<table><tr><th>field</th><th>before</th><th>after</th></tr>{}</table>", rows)

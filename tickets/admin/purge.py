"""Admin of tickets. The purge runs are read-only records for operators."""

from django.contrib import admin
from django.utils.html import format_html_join

from tickets.models_purge import PurgeRun


@admin.register(PurgeRun)
class PurgeRunAdmin(admin.ModelAdmin):
    list_display = [
        "started_at",
        "status",
        "trigger",
        "tickets_deleted",
        "licenses",
        "files_deleted",
        "seconds",
    ]
    list_filter = ["status", "trigger"]
    date_hierarchy = "started_at"
    fields = [
        "started_at", "finished_at", "seconds", "status", "trigger", "spam_cutoff", "trash_cutoff",
        "tickets_deleted", "files_deleted", "per_license", "error",
    ]  # fmt: skip
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="licenses")
    def licenses(self, run):
        return len(run.counts)

    @admin.display(description="seconds")
    def seconds(self, run):
        return None if run.seconds is None else round(run.seconds, 3)

    @admin.display(description="per license (spam, trash, seconds)")
    def per_license(self, run):
        rows = sorted(run.counts.items(), key=lambda item: int(item[0]))
        return format_html_join(
            "\n",
            "<div>license {}: {} spam, {} trash ({} s)</div>",
            ((lic, c["spam"], c["trash"], c.get("seconds", "")) for lic, c in rows),
        )

"""Tickets: lists that stay fast on a license with many tickets (no full count, relations joined, pickers
by autocomplete), a change form that writes through tickets.services (so read-only silos stay read-only),
the conversation (messages with their attachments and the changes between them, tickets/admin/conversation.py),
and actions to move tickets between silos or change status."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from accounts.admin.tenancy import LicenseScopedAdmin, ScopedRelatedListFilter
from accounts.models import Agent
from tickets import services
from tickets.admin.conversation import render_conversation
from tickets.models import SILOS, STATUSES, Ticket

_FIELDS = ("subject", "status", "priority", "silo", "custom_fields")
_RELATIONS = ("teams", "tags", "followers")


class TicketActionForm(ActionForm):
    silo = forms.ChoiceField(choices=[("", "silo…"), *[(s, s) for s in SILOS]], required=False)
    status = forms.ChoiceField(choices=[("", "status…"), *[(s, s) for s in STATUSES]], required=False)


PRIORITY_LABELS = {-10: "low", 0: "normal", 10: "high", 20: "urgent"}


class PriorityListFilter(admin.SimpleListFilter):
    title = "priority"
    parameter_name = "priority"

    def lookups(self, request, model_admin):
        return [(str(value), label) for value, label in PRIORITY_LABELS.items()]

    def queryset(self, request, queryset):
        choices = {str(value): value for value in PRIORITY_LABELS}
        return queryset.filter(priority=choices[self.value()]) if self.value() in choices else queryset


class TicketForm(forms.ModelForm):
    requester_email = forms.EmailField(required=False)
    message = forms.CharField(
        label="First message", required=False, widget=forms.Textarea(attrs={"rows": 4, "cols": 80})
    )
    reply = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
        help_text="Adds a message to the thread, as you.",
    )
    reply_is_private = forms.BooleanField(label="Private note", required=False)
    force = forms.BooleanField(
        label="Solve without a tag",
        required=False,
        help_text="A team with the tag reminder on refuses to solve an untagged ticket unless this is checked.",
    )

    class Meta:
        model = Ticket
        fields = (
            "license", *_FIELDS, "requester_email", "requester_name", *_RELATIONS,
            "assignment_team", "assignment_agent",
        )  # fmt: skip

    def clean(self):
        cleaned = super().clean()
        if self.instance.pk is None:
            for name in ("requester_email", "message"):
                if not cleaned.get(name):
                    self.add_error(name, "This field is required.")
        return cleaned


@admin.register(Ticket)
class TicketAdmin(LicenseScopedAdmin):
    form = TicketForm
    action_form = TicketActionForm
    actions = ("move_to_silo", "change_status")
    list_display = (
        "short_id", "subject", "requester_email", "status", "priority_label", "silo", "assignment_team",
        "assignment_agent", "license", "last_message_at",
    )  # fmt: skip
    list_display_links = ("short_id", "subject")
    list_select_related = ("license", "assignment_team", "assignment_agent")
    list_filter = (
        "status", "silo", PriorityListFilter, ("license", ScopedRelatedListFilter),
        ("teams", ScopedRelatedListFilter),
    )  # fmt: skip
    search_fields = ("subject", "=short_id", "requester_email", "assignment_agent__email")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    show_full_result_count = False  # a count of a whole license's tickets is the slow query of this page
    list_per_page = 50
    autocomplete_fields = ("license", "teams", "tags", "followers", "assignment_team", "assignment_agent")
    stamps = ("created_at", "created_by", "created_by_type", "updated_at", "updated_by")
    service_field_names = {"teamIDs": "teams", "tagIDs": "tags", "followers": "followers"}

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return (
                (None, {"fields": ("license", "subject", "requester_email", "requester_name", "message")}),
                ("State", {"fields": ("status", "priority")}),
                (
                    "Who handles it",
                    {"fields": ("teams", "assignment_team", "assignment_agent", "tags", "followers")},
                ),
            )
        return (
            (
                None,
                {"fields": ("short_id", "license", "subject", "requester", "status", "force", "priority", "silo")},
            ),
            ("Who handles it", {"fields": ("teams", "assignment_team", "assignment_agent", "tags", "followers")}),
            ("Conversation", {"fields": ("conversation",)}),
            ("Reply", {"fields": ("reply", "reply_is_private")}),
            (
                "Details",
                {
                    "classes": ("collapse",),
                    "fields": (
                        "custom_fields", "people", "language", "parent", "rating", "status_changed_at",
                        "last_message_at", "last_agent_message_at", "last_client_message_at", *self.stamps,
                    ),
                },
            ),
        )  # fmt: skip

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return (
            "short_id", "license", "requester", "people", "language", "parent", "rating", "conversation",
            "status_changed_at",
            "last_message_at", "last_agent_message_at", "last_client_message_at", *self.stamps,
        )  # fmt: skip

    @admin.display(description="priority", ordering="priority")
    def priority_label(self, obj):
        return PRIORITY_LABELS.get(obj.priority, obj.priority)

    @admin.display(description="requester")
    def requester(self, obj):
        return f"{obj.requester_name} <{obj.requester_email}>" if obj.requester_name else obj.requester_email

    @admin.display(description="thread")
    def conversation(self, obj):
        return mark_safe(render_conversation(obj))  # noqa: S308 - a template that escapes what it shows

    @admin.display(description="people in the loop")
    def people(self, obj):
        return ", ".join(p["email"] for p in obj.people_in_the_loop) or "—"

    @admin.display(description="rating")
    def rating(self, obj):
        if not obj.rating_score:
            return "—"
        return format_html("{} {}", obj.rating_score, obj.rating_comment)

    # --- writes -------------------------------------------------------------------------------------------

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        assignment = {"team": data.get("assignment_team"), "agent": data.get("assignment_agent")}
        if not change:
            obj.pk = services.ticket_create(
                license=data["license"],
                subject=data["subject"],
                requester={"email": data["requester_email"], "name": data.get("requester_name", "")},
                message={"text": data["message"]},
                status=data["status"],
                priority=data["priority"],
                teams=list(data["teams"]),
                tags=list(data["tags"]),
                followers=list(data["followers"]),
                assignment=assignment,
            ).pk
            return
        changed = set(form.changed_data) - {"custom_fields"}
        # Django's JSONField reports an empty object as changed every time: compare the values instead
        data["custom_fields"] = data.get("custom_fields") or {}
        if data["custom_fields"] != (form.initial.get("custom_fields") or {}):
            changed.add("custom_fields")
        fields = {name: data[name] for name in _FIELDS if name in changed}
        relations = {name: list(data[name]) for name in _RELATIONS if name in changed}
        if changed & {"assignment_team", "assignment_agent"}:
            relations["assignment"] = assignment
        if data.get("reply"):
            relations["message"] = {"text": data["reply"], "isPrivate": data["reply_is_private"]}
            # signed as the admin's own agent in this license, when they are one
            relations["author_agent"] = Agent.objects.filter(
                license_id=obj.license_id, account=request.user
            ).first()
        if fields or relations:
            services.ticket_update(ticket=obj, force=bool(data.get("force")), **fields, **relations)

    # --- actions ------------------------------------------------------------------------------------------

    def _chosen(self, request, name, allowed):
        value = request.POST.get(name, "")
        if value not in allowed:
            self.message_user(request, f"Choose a {name} next to the action first.", messages.WARNING)
            return None
        return value

    @admin.action(description="Move selected tickets to the chosen silo", permissions=["change"])
    def move_to_silo(self, request, queryset):
        silo = self._chosen(request, "silo", SILOS)
        if silo is None:
            return
        moved = [services.ticket_update(ticket=t, silo=silo) for t in queryset if t.silo != silo]
        self.message_user(request, f"Moved {len(moved)} ticket(s) to {silo}.", messages.SUCCESS)

    @admin.action(description="Set the chosen status on selected tickets", permissions=["change"])
    def change_status(self, request, queryset):
        status = self._chosen(request, "status", STATUSES)
        if status is None:
            return
        changed = [services.ticket_update(ticket=t, status=status) for t in queryset if t.status != status]
        self.message_user(request, f"Set {len(changed)} ticket(s) to {status}.", messages.SUCCESS)

    def has_delete_permission(self, request, obj=None):
        return False  # tickets leave through the trash silo (an action) and the purge, never by hand

"""Tickets: lists that stay fast on a license with many tickets (no full count, relations joined, pickers
by autocomplete), a change form that writes through tickets.services (so read-only silos stay read-only),
the conversation (messages with their attachments and the changes between them, tickets/admin/conversation.py),
and actions to move tickets between silos or change status."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm
from django.core.exceptions import PermissionDenied
from django.urls import path, reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.timesince import timesince

from accounts.admin.tenancy import (
    LicenseScopedAdmin,
    ScopedRelatedListFilter,
    admin_agent,
    admin_license_ids,
    license_label,
)
from accounts.models import License
from helpdesk.api.permissions import WRITERS
from helpdesk.errors import Conflict
from tickets import collisions, search, services
from tickets.admin import reply_box
from tickets.admin.conversation import render_conversation
from tickets.admin.dashboard import created_solved_csv
from tickets.admin.sla import sla_clock_html
from tickets.admin.ticket_lists import TicketListFilter
from tickets.custom_fields import forms as custom_field_forms
from tickets.macros import services as macro_services
from tickets.models import SILOS, STATUSES, Ticket

_FIELDS = ("subject", "status", "priority", "silo", "custom_fields")
_RELATIONS = ("teams", "tags", "followers")


class TicketActionForm(ActionForm):
    silo = forms.ChoiceField(choices=[("", "silo…"), *[(s, s) for s in SILOS]], required=False)
    status = forms.ChoiceField(choices=[("", "status…"), *[(s, s) for s in STATUSES]], required=False)


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
    # Fits a laptop screen: who and what, where it stands, whose it is, and when it last moved.
    list_display = (
        "short_id", "subject", "requester_column", "state", "priority", "team", "assignee", "license_name",
        "last_message",
    )  # fmt: skip
    list_display_links = ("short_id", "subject")
    list_select_related = ("license", "assignment_team", "assignment_agent")
    list_filter = (
        TicketListFilter,  # "My open tickets" first, then every ticket and the license's views, counted
        "status", "silo", "priority", ("license", ScopedRelatedListFilter),
        ("teams", ScopedRelatedListFilter), ("tags", ScopedRelatedListFilter),
        ("assignment_agent", ScopedRelatedListFilter),
    )  # fmt: skip
    # The search box uses the API's full-text search (subject, requester, message text): get_search_results.
    search_fields = ("subject",)
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    show_full_result_count = False  # a count of a whole license's tickets is the slow query of this page
    list_per_page = 50
    autocomplete_fields = ("license", "teams", "tags", "followers", "assignment_team", "assignment_agent")
    stamps = ("created_at", "created_by", "created_by_type", "updated_at", "updated_by")
    service_field_names = {"teamIDs": "teams", "tagIDs": "tags", "followers": "followers"}
    writers = WRITERS  # as PATCH /v1/tickets/{ID}: owners and normal agents work tickets, viewers read

    def get_list_display(self, request):
        # the license column only for those who see several: an agent of one license knows whose tickets these are
        ids = admin_license_ids(request)
        if ids is not None and len(ids) <= 1:
            return tuple(name for name in self.list_display if name != "license_name")
        return self.list_display

    def _custom_field_inputs(self, request, obj) -> dict:
        """The typed inputs of the ticket's license's custom fields (once per request)."""
        if not hasattr(request, "_custom_field_inputs"):
            request._custom_field_inputs = custom_field_forms.inputs(obj.license_id, obj.custom_fields or {})
        return request._custom_field_inputs

    def get_form(self, request, obj=None, change=False, **kwargs):
        extra = {}
        if obj is not None:
            extra.update(self._custom_field_inputs(request, obj))
            if self.has_change_permission(request, obj):
                url = reverse("admin:tickets_ticket_canned_response", args=[obj.pk])
                extra.update(reply_box.reply_fields(request, obj, url))
        if extra:
            kwargs["form"] = type(self.form.__name__, (self.form,), extra)
        return super().get_form(request, obj, change=change, **kwargs)

    def canned_response_view(self, request, object_id):
        """The reply box's canned response, filled for this ticket (tickets/admin/reply_box.py)."""
        ticket = self.get_object(request, object_id)
        if ticket is None or not self.has_change_permission(request, ticket):
            raise PermissionDenied
        return reply_box.canned_response_json(request, ticket)

    def service_refused(self, request, exc):
        if not (isinstance(exc, Conflict) and exc.code == "ticket_changed"):
            return
        # the page again with the ticket as it is now: the new version, and what happened since, named
        request.POST = request.POST.copy()
        request.POST["version"] = exc.details["ETag"].strip('"')
        request.POST["macro"] = ""
        news = "; ".join(reply_box.event_line(event) for event in exc.details["events"]) or "a change"
        self.message_user(
            request,
            f"Not sent: the ticket changed since you opened it ({news}). Read the conversation below, then save "
            "again to send your reply as it is.",
            messages.WARNING,
        )

    def get_urls(self):
        # the dashboard's created/solved chart as CSV (tickets/admin/dashboard.py)
        csv_view = self.admin_site.admin_view(created_solved_csv)
        return [
            path("created-solved.csv", csv_view, name="tickets_ticket_created_solved_csv"),
            path(
                "<path:object_id>/canned-response/",
                self.admin_site.admin_view(self.canned_response_view),
                name="tickets_ticket_canned_response",
            ),
            *super().get_urls(),
        ]

    def get_fieldsets(self, request, obj=None):
        if obj is not None and (typed := self._custom_field_inputs(request, obj)):
            return (*self._fieldsets(request, obj), ("Custom fields", {"fields": tuple(typed)}))
        return self._fieldsets(request, obj)

    def _fieldsets(self, request, obj=None):
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
            ("Service level", {"fields": ("service_level",)}),
            ("Conversation", {"fields": ("conversation",)}),
            *(
                [("Reply", {"fields": ("reply", "canned_shortcut", "reply_is_private", "macro", "version")})]
                if self.has_change_permission(request, obj)
                else []
            ),
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
            "status_changed_at", "service_level",
            "last_message_at", "last_agent_message_at", "last_client_message_at", *self.stamps,
        )  # fmt: skip

    @admin.display(description="status", ordering="status")
    def state(self, obj):
        return obj.status if obj.silo == "tickets" else f"{obj.status} ({obj.silo})"

    @admin.display(description="license", ordering="license_id")
    def license_name(self, obj):
        return license_label(obj.license)

    @admin.display(description="last message", ordering="last_message_at")
    def last_message(self, obj):
        # its age, as agents read a queue ("3 hours ago"); the date itself on hover
        when = timezone.localtime(obj.last_message_at)
        return format_html(
            '<span title="{}">{} ago</span>', date_format(when, "M j, H:i"), timesince(when).split(",")[0]
        )

    @admin.display(description="team", ordering="assignment_team__name")
    def team(self, obj):
        return str(obj.assignment_team) if obj.assignment_team else "—"

    @admin.display(description="assignee", ordering="assignment_agent__name")
    def assignee(self, obj):
        return str(obj.assignment_agent) if obj.assignment_agent else "—"

    def get_search_results(self, request, queryset, search_term):
        # no search term for the fields: the parent only narrows autocompletes to one license
        queryset, distinct = super().get_search_results(request, queryset, "")
        term = search_term.strip()
        if term:
            queryset = queryset.filter(search.query_q(term, self._search_languages(request)))
        return queryset, distinct

    def _search_languages(self, request) -> list[str]:
        """The stemmings the API would use: the detected languages of the licenses this admin sees."""
        licenses = License.objects.all()
        ids = admin_license_ids(request)
        if ids is not None:
            licenses = licenses.filter(pk__in=ids)
        return sorted(
            {code for codes in licenses.values_list("detected_languages", flat=True) for code in codes}
        )

    @admin.display(description="requester", ordering="requester_email")
    def requester_column(self, obj):
        # the name (the address on hover): the list stays narrow enough for a laptop screen
        return format_html(
            '<span title="{}">{}</span>', obj.requester_email, obj.requester_name or obj.requester_email
        )

    @admin.display(description="requester")
    def requester(self, obj):
        return f"{obj.requester_name} <{obj.requester_email}>" if obj.requester_name else obj.requester_email

    def get_object(self, request, object_id, from_field=None):
        obj = super().get_object(request, object_id, from_field)
        if obj is not None:
            # remote images of the thread's HTML only when the agent asks (tickets/admin/conversation.py)
            obj.show_remote_images = request.GET.get("images") == "show"
        return obj

    @admin.display(description="thread")
    def conversation(self, obj):
        show_images = getattr(obj, "show_remote_images", False)
        # a template that escapes what it shows, and HTML that nh3 cleaned
        return mark_safe(render_conversation(obj, show_images=show_images))  # noqa: S308

    @admin.display(description="SLA clock")
    def service_level(self, obj):
        return sla_clock_html(obj, timezone.now())

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
        data["custom_fields"] = custom_field_forms.merged(data.get("custom_fields") or {}, data)
        if data["custom_fields"] != (form.initial.get("custom_fields") or {}):
            changed.add("custom_fields")
        fields = {name: data[name] for name in _FIELDS if name in changed}
        relations = {name: list(data[name]) for name in _RELATIONS if name in changed}
        if changed & {"assignment_team", "assignment_agent"}:
            relations["assignment"] = assignment
        if data.get("reply"):
            relations["message"] = {"text": data["reply"], "isPrivate": data["reply_is_private"]}
            # signed as the admin's own agent in this license, when they are one
            relations["author_agent"] = admin_agent(request, obj.license_id)
        # the version the page was opened at: a write against an older one is refused (tickets.collisions)
        expected = frozenset({data["version"]}) if data.get("version") is not None else None
        if fields or relations:
            obj = services.ticket_update(
                ticket=obj, force=bool(data.get("force")), expected_versions=expected, **fields, **relations
            )
        elif data.get("macro") is not None:
            collisions.check(Ticket.objects.select_for_update().get(pk=obj.pk), expected)
        if data.get("macro") is not None:
            macro_services.macro_apply(
                macro=data["macro"], ticket=obj, agent=admin_agent(request, obj.license_id)
            )

    # --- actions ------------------------------------------------------------------------------------------

    def _chosen(self, request, name, allowed):
        value = request.POST.get(name, "")
        if value not in allowed:
            self.message_user(request, f"Choose a {name} next to the action first.", messages.WARNING)
            return None
        return value

    def _writable(self, request, queryset):
        """The chosen tickets of the licenses where this person works tickets (not those where they only read)."""
        ids = admin_license_ids(request, self.writers)
        return queryset if ids is None else queryset.filter(license_id__in=ids)

    @admin.action(description="Move selected tickets to the chosen silo", permissions=["change"])
    def move_to_silo(self, request, queryset):
        queryset = self._writable(request, queryset)
        silo = self._chosen(request, "silo", SILOS)
        if silo is None:
            return
        moved = [services.ticket_update(ticket=t, silo=silo) for t in queryset if t.silo != silo]
        self.message_user(request, f"Moved {len(moved)} ticket(s) to {silo}.", messages.SUCCESS)

    @admin.action(description="Set the chosen status on selected tickets", permissions=["change"])
    def change_status(self, request, queryset):
        queryset = self._writable(request, queryset)
        status = self._chosen(request, "status", STATUSES)
        if status is None:
            return
        changed = [services.ticket_update(ticket=t, status=status) for t in queryset if t.status != status]
        self.message_user(request, f"Set {len(changed)} ticket(s) to {status}.", messages.SUCCESS)

    def has_delete_permission(self, request, obj=None):
        return False  # tickets leave through the trash silo (an action) and the purge, never by hand

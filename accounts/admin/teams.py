"""Teams: typed settings, the template and the auto-assigned agents chosen within the team's license."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db.models import Count

from accounts import services
from accounts.admin.tenancy import LicenseScopedAdmin, ScopedRelatedListFilter
from accounts.models import Agent, Team, TeamMembership, default_team_settings

SETTINGS_KEYS = {
    "notify_team_about_requesters_activity": "notifyTeamAboutRequestersActivity",
    "notify_team_about_assigned_ticket": "notifyTeamAboutAssignedTicket",
    "unauth_reply_creates_new_ticket": "unauthReplyCreatesNewTicket",
    "tag_reminder": "tagReminder",
}
_FIELDS = ("name", "reply_name", "reply_address_id", "template")


class TeamForm(forms.ModelForm):
    notify_team_about_requesters_activity = forms.BooleanField(required=False)
    notify_team_about_assigned_ticket = forms.BooleanField(required=False)
    unauth_reply_creates_new_ticket = forms.BooleanField(required=False)
    tag_reminder = forms.BooleanField(required=False)
    autoassignment_agents = forms.ModelMultipleChoiceField(
        Agent.objects.none(), required=False, help_text="Agents considered for ticket assignment in the team."
    )

    class Meta:
        model = Team
        fields = ("license", *_FIELDS, *SETTINGS_KEYS, "autoassignment_agents")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        settings = {**default_team_settings(), **(self.instance.settings or {})}
        for name, key in SETTINGS_KEYS.items():
            self.initial.setdefault(name, settings.get(key))
        if self.instance.pk is not None:
            self.initial.setdefault(
                "autoassignment_agents",
                list(self.instance.autoassignment_agents.values_list("pk", flat=True)),
            )

    def settings_value(self) -> dict:
        return {key: self.cleaned_data[name] for name, key in SETTINGS_KEYS.items()}


@admin.register(Team)
class TeamAdmin(LicenseScopedAdmin):
    form = TeamForm
    list_display = ("name", "license", "is_default", "agent_count", "template", "updated_at")
    list_select_related = ("license", "template")
    list_filter = (("license", ScopedRelatedListFilter),)
    search_fields = ("name",)
    ordering = ("license", "name")
    autocomplete_fields = ("license", "template")
    readonly_fields = ("created_at", "created_by", "created_by_type", "updated_at", "updated_by")
    service_field_names = {
        "templateID": "template",
        "autoassignmentAgentIDs": "autoassignment_agents",
        "replyAddressID": "reply_address_id",
    }

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(agent_total=Count("agents", distinct=True))

    def get_fieldsets(self, request, obj=None):
        main = _FIELDS if obj is not None else ("license", *_FIELDS)
        fieldsets = [
            (None, {"fields": main}),
            ("Settings", {"fields": tuple(SETTINGS_KEYS)}),
            ("Auto-assignment", {"fields": (self._autoassignment_field(request, obj),)}),
        ]
        if obj is not None:
            fieldsets.append(("Stamps", {"classes": ("collapse",), "fields": self.readonly_fields}))
        return fieldsets

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        field = form.base_fields["autoassignment_agents"]
        field.queryset = self.related_queryset(request, Agent)
        # any relation to Agent serves the autocomplete view (it searches the Agent admin, with its tenancy)
        field.widget = self.related_widget(request, TeamMembership._meta.get_field("agent"), multiple=True)
        return form

    def _autoassignment_field(self, request, obj):
        # a reader's page shows the agents as text: the form field is a reverse relation Django cannot display
        if obj is None or self.has_change_permission(request, obj):
            return "autoassignment_agents"
        return "autoassignment_agent_names"

    @admin.display(description="autoassignment agents")
    def autoassignment_agent_names(self, obj):
        return ", ".join(sorted(str(agent) for agent in obj.autoassignment_agents.all())) or "—"

    @admin.display(boolean=True, description="default")
    def is_default(self, obj):
        return obj.license.default_team_id == obj.pk

    @admin.display(description="agents", ordering="agent_total")
    def agent_count(self, obj):
        return obj.agent_total

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        agents = list(data["autoassignment_agents"])
        if not change:
            fields = {name: data[name] for name in _FIELDS if name != "name"}
            obj.pk = services.team_create(
                license=data["license"],
                name=data["name"],
                settings=form.settings_value(),
                autoassignment_agents=agents,
                **fields,
            ).pk
            return
        fields = {name: data[name] for name in _FIELDS if name in form.changed_data}
        if set(SETTINGS_KEYS) & set(form.changed_data):
            fields["settings"] = form.settings_value()
        relations = {"autoassignment_agents": agents} if "autoassignment_agents" in form.changed_data else {}
        services.team_update(team=obj, **fields, **relations)

    def delete_object(self, request, obj):
        services.team_delete(team=obj)

"""Agents: roles as checkboxes, teams picked by autocomplete within the agent's license, all through services."""

from __future__ import annotations

from django import forms
from django.contrib import admin

from accounts import services
from accounts.admin.display import key_values
from accounts.admin.tenancy import LicenseScopedAdmin, ScopedRelatedListFilter, admin_agents
from accounts.models import ROLES, Agent, Team, TeamMembership
from helpdesk.api.permissions import WRITERS

_EDITABLE = ("name", "roles", "status", "job_title", "avatar", "autoassignment", "signature_text")
# what a normal agent changes of its own profile (the API's OWN_PROFILE_FIELDS); the rest is the owners'
_OWN_PROFILE = ("name", "job_title", "avatar", "signature_text")


class RoleListFilter(admin.SimpleListFilter):
    title = "role"
    parameter_name = "role"

    def lookups(self, request, model_admin):
        return [(role, role) for role in ROLES]

    def queryset(self, request, queryset):
        if self.value() in ROLES:
            # roles is a JSON list; its text holds the quoted name on PostgreSQL and SQLite alike
            return queryset.filter(roles__icontains=f'"{self.value()}"')
        return queryset


class AgentForm(forms.ModelForm):
    roles = forms.MultipleChoiceField(choices=[(r, r) for r in ROLES], widget=forms.CheckboxSelectMultiple)
    teams = forms.ModelMultipleChoiceField(Team.objects.none(), required=False)
    autoassignment_teams = forms.ModelMultipleChoiceField(
        Team.objects.none(), required=False, help_text="Teams from which the agent can be auto-assigned."
    )

    class Meta:
        model = Agent
        fields = ("license", "email", *_EDITABLE, "teams", "autoassignment_teams")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            for name in ("teams", "autoassignment_teams"):
                self.initial.setdefault(name, list(getattr(self.instance, name).values_list("pk", flat=True)))


@admin.register(Agent)
class AgentAdmin(LicenseScopedAdmin):
    form = AgentForm
    list_display = ("email", "name", "license", "role_list", "status", "team_list", "created_at")
    list_select_related = ("license",)
    list_filter = (
        "status",
        RoleListFilter,
        ("license", ScopedRelatedListFilter),
        ("teams", ScopedRelatedListFilter),
    )
    search_fields = ("email", "name")
    date_hierarchy = "created_at"
    ordering = ("license", "email")
    autocomplete_fields = ("license",)
    readonly_fields = (
        "account", "flags_display", "settings_display",
        "created_at", "created_by", "created_by_type", "updated_at", "updated_by",
    )  # fmt: skip
    service_field_names = {"teamIDs": "teams", "autoassignmentTeamIDs": "autoassignment_teams"}

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("teams")

    def get_fieldsets(self, request, obj=None):
        # a new agent is always invited (accounts.services.agent_create): no status to choose when adding
        identity = ("license", "email") if obj is None else ("account", "email", "status")
        fieldsets = [
            (None, {"fields": (*identity, "name", "roles", "job_title", "avatar")}),
            ("Teams", {"fields": ("teams", "autoassignment", "autoassignment_teams")}),
            ("Signature", {"classes": ("collapse",), "fields": ("signature_text",)}),
        ]
        if obj is not None:
            fieldsets.append(
                (
                    "Preferences and stamps",
                    {"classes": ("collapse",), "fields": self.readonly_fields[1:]},
                )
            )
        return fieldsets

    def own_profile_only(self, request, obj) -> bool:
        """A normal agent on its own page: it edits its profile, not its roles, status or teams."""
        if obj is None or request.user.is_superuser:
            return False
        agent = (admin_agents(request) or {}).get(obj.license_id)
        return agent is not None and not agent.is_owner and agent.pk == obj.pk

    def has_change_permission(self, request, obj=None):
        if self.own_profile_only(request, obj):
            return bool(set(obj.roles) & WRITERS)  # as PATCH /v1/agents/{ID}: writers, own profile only
        return super().has_change_permission(request, obj)

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        if self.own_profile_only(request, obj):
            owners_only = [
                name for name in (*_EDITABLE, "teams", "autoassignment_teams") if name not in _OWN_PROFILE
            ]
            return ("email", *owners_only, *self.readonly_fields)
        return ("email", *self.readonly_fields)

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        for name in ("teams", "autoassignment_teams"):
            field = form.base_fields.get(name)
            if field is None:  # read-only on a normal agent's own page
                continue
            field.queryset = self.related_queryset(request, Team)
            # any relation to Team serves the autocomplete view (it searches the Team admin, with its tenancy)
            field.widget = self.related_widget(request, TeamMembership._meta.get_field("team"), multiple=True)
        return form

    @admin.display(description="roles")
    def role_list(self, obj):
        return ", ".join(obj.roles)

    @admin.display(description="teams")
    def team_list(self, obj):
        return ", ".join(sorted(team.name for team in obj.teams.all()))

    @admin.display(description="flags")
    def flags_display(self, obj):
        return key_values(obj.flags)

    @admin.display(description="settings")
    def settings_display(self, obj):
        return key_values(obj.settings)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        relations = {name: list(data[name]) for name in ("teams", "autoassignment_teams") if name in data}
        if not change:
            fields = {
                name: data[name] for name in _EDITABLE if name != "roles" and data.get(name) is not None
            }
            obj.pk = services.agent_create(
                license=data["license"], email=data["email"], roles=data["roles"], **fields, **relations
            ).pk
            return
        fields = {name: data[name] for name in _EDITABLE if name in form.changed_data}
        relations = {name: value for name, value in relations.items() if name in form.changed_data}
        services.agent_update(agent=obj, **fields, **relations)

    def delete_object(self, request, obj):
        services.agent_delete(agent=obj)

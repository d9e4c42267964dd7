"""Canned responses and macros in the admin, tenant-scoped, written through their services with the signed-in
agent as actor (the API's rules: owners and normal agents write canned responses; owners shared macros, every
writer its own private ones, which no one else sees)."""

from django import forms
from django.contrib import admin
from django.db.models import Q

from accounts.admin.tenancy import (
    LicenseScopedAdmin,
    ScopedRelatedListFilter,
    acting_agent,
    admin_agents,
)
from accounts.models import TeamMembership
from helpdesk.api.permissions import WRITERS
from tickets.canned_responses import services as canned_services
from tickets.canned_responses.models import CannedResponse
from tickets.macros import services as macro_services
from tickets.macros.models import PRIVATE, Macro

_STAMPS = ("created_at", "created_by", "created_by_type", "updated_at", "updated_by")


class CannedResponseForm(forms.ModelForm):
    class Meta:
        model = CannedResponse
        fields = ("license", "text", "shortcuts", "team")


@admin.register(CannedResponse)
class CannedResponseAdmin(LicenseScopedAdmin):
    form = CannedResponseForm
    list_display = ("__str__", "license", "team", "updated_at")
    list_select_related = ("license", "team")
    list_filter = (("license", ScopedRelatedListFilter),)
    search_fields = ("text",)
    ordering = ("license", "-created_at")
    autocomplete_fields = ("license",)
    readonly_fields = _STAMPS
    service_field_names = {"teamID": "team"}
    writers = WRITERS  # the contract: normal agents may create and edit them

    def get_queryset(self, request):
        # as /v1/cannedResponses: an owner sees all of its license's, anyone else those of no team or its teams
        queryset = super().get_queryset(request)
        agents = admin_agents(request)
        if agents is None:
            return queryset
        owned = [pk for pk, agent in agents.items() if agent.is_owner]
        teams = TeamMembership.objects.filter(agent__in=[a.pk for a in agents.values()]).values("team_id")
        return queryset.filter(Q(license_id__in=owned) | Q(team__isnull=True) | Q(team_id__in=teams))

    def get_fields(self, request, obj=None):
        fields = ("text", "shortcuts", "team")
        return (*fields, *self.readonly_fields) if obj is not None else ("license", *fields)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        values = {"text": data["text"], "shortcuts": data["shortcuts"] or [], "team": data["team"]}
        if change:
            actor = acting_agent(request, obj.license_id)
            canned_services.canned_response_update(canned_response=obj, actor=actor, **values)
            return
        actor = acting_agent(request, data["license"].pk)
        obj.pk = canned_services.canned_response_create(license=data["license"], actor=actor, **values).pk

    def delete_object(self, request, obj):
        actor = acting_agent(request, obj.license_id)
        canned_services.canned_response_delete(canned_response=obj, actor=actor)


class MacroForm(forms.ModelForm):
    class Meta:
        model = Macro
        fields = ("license", "name", "visibility", "agent", "actions")


@admin.register(Macro)
class MacroAdmin(LicenseScopedAdmin):
    form = MacroForm
    list_display = ("name", "visibility", "agent", "license", "updated_at")
    list_select_related = ("license", "agent")
    list_filter = (("license", ScopedRelatedListFilter), "visibility")
    search_fields = ("name",)
    ordering = ("license", "name")
    autocomplete_fields = ("license",)
    readonly_fields = _STAMPS
    service_field_names = {"agentID": "agent"}
    writers = WRITERS  # owners shared macros, every writer its own private ones (the service decides)

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        agents = admin_agents(request)
        if agents is None:
            return queryset
        return queryset.filter(~Q(visibility=PRIVATE) | Q(agent__in=[a.pk for a in agents.values()]))

    def object_allows(self, request, obj, agent, *, write):
        if obj.visibility == PRIVATE:
            return obj.agent_id == agent.pk
        return agent.is_owner or not write

    def get_fields(self, request, obj=None):
        # an agent's private macro is its own: only a superuser names another agent
        agent = ("agent",) if request.user.is_superuser else ()
        fields = ("name", "visibility", *agent, "actions")
        return (*fields, *self.readonly_fields) if obj is not None else ("license", *fields)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        values = {
            "name": data["name"],
            "visibility": data["visibility"],
            "agent": data.get("agent"),
            "actions": data["actions"] or [],
        }
        if change:
            actor = acting_agent(request, obj.license_id)
            macro_services.macro_update(macro=obj, actor=actor, **values)
            return
        actor = acting_agent(request, data["license"].pk)
        obj.pk = macro_services.macro_create(license=data["license"], actor=actor, **values).pk

    def delete_object(self, request, obj):
        macro_services.macro_delete(macro=obj, actor=acting_agent(request, obj.license_id))

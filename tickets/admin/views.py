"""Views (saved ticket searches), written through tickets.saved_views.services with the signed-in agent as
author, so the API's rules decide: shared views are the owners', a private view is its agent's alone (no one
else sees it, owners included). A superuser sees and edits every view, as the operator."""

from django import forms
from django.contrib import admin
from django.db.models import Q

from accounts.admin.tenancy import LicenseScopedAdmin, ScopedRelatedListFilter, acting_agent, admin_agents
from helpdesk.api.permissions import WRITERS
from tickets.saved_views import services
from tickets.saved_views.models import View


class ViewForm(forms.ModelForm):
    private = forms.BooleanField(required=False, help_text="Only you see a private view.")

    class Meta:
        model = View
        fields = ("license", "name", "filters", "ordering")


@admin.register(View)
class ViewAdmin(LicenseScopedAdmin):
    form = ViewForm
    list_display = ("name", "license", "agent", "ordering", "updated_at")
    list_select_related = ("license", "agent")
    list_filter = (("license", ScopedRelatedListFilter),)
    search_fields = ("name",)
    ordering = ("license", "ordering", "name")
    autocomplete_fields = ("license",)
    readonly_fields = ("agent", "created_at", "created_by", "created_by_type", "updated_at", "updated_by")
    writers = WRITERS  # normal agents their private views; shared ones are the owners' (the service says)

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        agents = admin_agents(request)
        if agents is None:
            return queryset
        return queryset.filter(Q(agent__isnull=True) | Q(agent__in=[a.pk for a in agents.values()]))

    def object_allows(self, request, obj, agent, *, write):
        if obj.agent_id is not None:
            return obj.agent_id == agent.pk
        return agent.is_owner or not write

    def get_fields(self, request, obj=None):
        editable = ("name", "filters", "ordering")
        return (*editable, *self.readonly_fields) if obj is not None else ("license", "private", *editable)

    def save_model(self, request, obj, form, change):
        fields = {name: form.cleaned_data[name] for name in ("name", "filters", "ordering")}
        fields["filters"] = fields["filters"] or {}
        if change:
            services.view_update(view=obj, author=acting_agent(request, obj.license_id), **fields)
            return
        license = form.cleaned_data["license"]
        author = acting_agent(request, license.pk)
        agent_id = author.pk if author is not None and form.cleaned_data.get("private") else None
        obj.pk = services.view_create(license=license, author=author, agent_id=agent_id, **fields).pk

    def delete_object(self, request, obj):
        services.view_delete(view=obj, author=acting_agent(request, obj.license_id))

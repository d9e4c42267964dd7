"""Minimal admin for licenses, agents and teams: every write goes through accounts.services (so it is
validated and audited exactly like the API's)."""

from django import forms
from django.contrib import admin

from accounts import services
from accounts.models import Agent, License, Team

_AGENT_FIELDS = ("name", "roles", "status", "job_title")


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ("email", "name", "license", "status")
    list_filter = ("status",)
    search_fields = ("email", "name")

    def get_fields(self, request, obj=None):
        return _AGENT_FIELDS if obj else ("license", "email", *_AGENT_FIELDS)

    def save_model(self, request, obj, form, change):
        if change:
            fields = {name: form.cleaned_data[name] for name in form.changed_data if name in _AGENT_FIELDS}
            services.agent_update(agent=obj, **fields)
            return
        data = form.cleaned_data
        fields = {name: data[name] for name in ("name", "status", "job_title") if data.get(name) is not None}
        obj.pk = services.agent_create(
            license=data["license"], email=data["email"], roles=data["roles"], **fields
        ).pk

    def delete_model(self, request, obj):
        services.agent_delete(agent=obj)

    def delete_queryset(self, request, queryset):
        for agent in queryset:
            services.agent_delete(agent=agent)


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "license")
    search_fields = ("name",)

    def get_fields(self, request, obj=None):
        return ("name",) if obj else ("license", "name")

    def save_model(self, request, obj, form, change):
        if change:
            services.team_update(team=obj, name=form.cleaned_data["name"])
            return
        obj.pk = services.team_create(license=form.cleaned_data["license"], name=form.cleaned_data["name"]).pk

    def delete_model(self, request, obj):
        services.team_delete(team=obj)

    def delete_queryset(self, request, queryset):
        for team in queryset:
            services.team_delete(team=team)


class LicenseAddForm(forms.ModelForm):
    owner_email = forms.EmailField()
    company_name = forms.CharField(required=False)

    class Meta:
        model = License
        fields = ()


@admin.register(License)
class LicenseAdmin(admin.ModelAdmin):
    list_display = ("__str__", "created_at")

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = LicenseAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request, obj=None):
        return ("owner_email", "company_name") if obj is None else ("settings",)

    def save_model(self, request, obj, form, change):
        if change:
            services.license_update(license=obj, data={"settings": form.cleaned_data["settings"]})
            return
        license = services.license_create(
            owner_email=form.cleaned_data["owner_email"], company_name=form.cleaned_data["company_name"]
        )
        obj.pk = license.pk

    def has_delete_permission(self, request, obj=None):
        return False  # licenses are not deleted (no service, no API); their audit log outlives them anyway

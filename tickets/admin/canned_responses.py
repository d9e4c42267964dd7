"""Canned responses and macros in the admin, tenant-scoped, written through their services."""

from django import forms
from django.contrib import admin

from accounts.admin.tenancy import LicenseScopedAdmin, ScopedRelatedListFilter
from tickets.canned_responses import services as canned_services
from tickets.canned_responses.models import CannedResponse
from tickets.macros import services as macro_services
from tickets.macros.models import Macro

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

    def get_fields(self, request, obj=None):
        fields = ("text", "shortcuts", "team")
        return (*fields, *self.readonly_fields) if obj is not None else ("license", *fields)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        values = {"text": data["text"], "shortcuts": data["shortcuts"] or [], "team": data["team"]}
        if change:
            canned_services.canned_response_update(canned_response=obj, **values)
            return
        obj.pk = canned_services.canned_response_create(license=data["license"], **values).pk

    def delete_object(self, request, obj):
        canned_services.canned_response_delete(canned_response=obj)


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

    def get_fields(self, request, obj=None):
        fields = ("name", "visibility", "agent", "actions")
        return (*fields, *self.readonly_fields) if obj is not None else ("license", *fields)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        values = {
            "name": data["name"],
            "visibility": data["visibility"],
            "agent": data["agent"],
            "actions": data["actions"] or [],
        }
        if change:
            macro_services.macro_update(macro=obj, **values)
            return
        obj.pk = macro_services.macro_create(license=data["license"], **values).pk

    def delete_object(self, request, obj):
        macro_services.macro_delete(macro=obj)

"""Custom field definitions, written through tickets.custom_fields.services."""

from django import forms
from django.contrib import admin

from accounts.admin.tenancy import LicenseScopedAdmin, ScopedRelatedListFilter
from tickets.custom_fields import services
from tickets.custom_fields.models import CustomField

_EDITABLE = ("display_name", "role_level", "status", "options", "teams")


class CustomFieldForm(forms.ModelForm):
    class Meta:
        model = CustomField
        fields = ("license", "api_key", "type", *_EDITABLE)


@admin.register(CustomField)
class CustomFieldAdmin(LicenseScopedAdmin):
    form = CustomFieldForm
    list_display = ("api_key", "display_name", "type", "status", "license", "updated_at")
    list_select_related = ("license",)
    list_filter = (("license", ScopedRelatedListFilter), "type", "status")
    search_fields = ("api_key", "display_name")
    ordering = ("license", "api_key")
    autocomplete_fields = ("license",)
    filter_horizontal = ("teams",)
    readonly_fields = ("created_at", "created_by", "created_by_type", "updated_at", "updated_by")
    service_field_names = {"apiKey": "api_key", "options": "options", "teamIDs": "teams"}

    def get_fields(self, request, obj=None):
        if obj is not None:  # the apiKey and the type are fixed at creation
            return ("api_key", "type", *_EDITABLE, *self.readonly_fields)
        return ("license", "api_key", "type", *_EDITABLE)

    def get_readonly_fields(self, request, obj=None):
        return (*self.readonly_fields, "api_key", "type") if obj is not None else self.readonly_fields

    def save_related(self, request, form, formsets, change):
        pass  # the teams are set by the service, in save_model

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        fields = {name: data[name] for name in _EDITABLE if name in data}
        fields["teams"] = list(fields.get("teams") or [])
        fields["options"] = fields.get("options") or []
        if change:
            services.custom_field_update(custom_field=obj, **fields)
            return
        obj.pk = services.custom_field_create(
            license=data["license"], api_key=data["api_key"], type=data["type"], **fields
        ).pk

    def delete_object(self, request, obj):
        services.custom_field_delete(custom_field=obj)

"""Rules in the admin, tenant-scoped, written through their services (conditions and actions checked there)."""

from django import forms
from django.contrib import admin

from accounts.admin.tenancy import LicenseScopedAdmin, ScopedRelatedListFilter
from tickets.rules import services
from tickets.rules.models import Rule

_STAMPS = ("use_counter", "created_at", "created_by", "created_by_type", "updated_at", "updated_by")
_FIELDS = (
    "name", "description", "active", "ordering", "quantifier", "type", "triggers", "actions", "limit_per_ticket",
)  # fmt: skip


class RuleForm(forms.ModelForm):
    class Meta:
        model = Rule
        fields = ("license", *_FIELDS)


@admin.register(Rule)
class RuleAdmin(LicenseScopedAdmin):
    form = RuleForm
    list_display = ("name", "active", "ordering", "use_counter", "license", "updated_at")
    list_select_related = ("license",)
    list_filter = (("license", ScopedRelatedListFilter), "active")
    search_fields = ("name",)
    ordering = ("license", "ordering", "name")
    autocomplete_fields = ("license",)
    readonly_fields = _STAMPS
    service_field_names = {"limitPerTicket": "limit_per_ticket"}

    def get_fields(self, request, obj=None):
        return (*_FIELDS, *self.readonly_fields) if obj is not None else ("license", *_FIELDS)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        values = {name: data[name] for name in _FIELDS}
        values["triggers"] = values["triggers"] or []
        values["actions"] = values["actions"] or []
        values["description"] = values["description"] or ""
        if change:
            services.rule_update(rule=obj, **values)
            return
        obj.pk = services.rule_create(license=data["license"], **values).pk

    def delete_object(self, request, obj):
        services.rule_delete(rule=obj)

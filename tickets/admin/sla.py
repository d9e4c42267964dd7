"""Business hours and SLA policies in the admin, tenant-scoped, written through their services (everything
checked there, refusals shown next to their field); and a ticket's SLA clock as the change page shows it."""

from __future__ import annotations

from datetime import datetime

from django import forms
from django.contrib import admin
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.timesince import timesince, timeuntil

from accounts.admin.tenancy import LicenseScopedAdmin, ScopedRelatedListFilter
from tickets.sla import services
from tickets.sla.models import BusinessHours, SlaPolicy
from tickets.sla.tracker import DOCUMENT_KEYS

_STAMPS = ("created_at", "created_by", "created_by_type", "updated_at", "updated_by")
_HOURS_FIELDS = ("name", "timezone", "week", "holidays")
_POLICY_FIELDS = ("name", "ordering", "conditions", "targets", "business_hours")
_LABELS = {"firstResponse": "First response", "nextResponse": "Next response", "resolution": "Resolution"}


class BusinessHoursForm(forms.ModelForm):
    class Meta:
        model = BusinessHours
        fields = ("license", *_HOURS_FIELDS)


@admin.register(BusinessHours)
class BusinessHoursAdmin(LicenseScopedAdmin):
    form = BusinessHoursForm
    list_display = ("name", "timezone", "license", "updated_at")
    list_select_related = ("license",)
    list_filter = (("license", ScopedRelatedListFilter),)
    search_fields = ("name",)
    ordering = ("license", "name")
    autocomplete_fields = ("license",)
    readonly_fields = _STAMPS

    def get_fields(self, request, obj=None):
        return (*_HOURS_FIELDS, *self.readonly_fields) if obj is not None else ("license", *_HOURS_FIELDS)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        values = {name: data[name] for name in _HOURS_FIELDS}
        values["holidays"] = values["holidays"] or []
        values["week"] = values["week"] or {}
        if change:
            services.business_hours_update(business_hours=obj, **values)
            return
        obj.pk = services.business_hours_create(license=data["license"], **values).pk

    def delete_object(self, request, obj):
        services.business_hours_delete(business_hours=obj)


class SlaPolicyForm(forms.ModelForm):
    class Meta:
        model = SlaPolicy
        fields = ("license", *_POLICY_FIELDS)


@admin.register(SlaPolicy)
class SlaPolicyAdmin(LicenseScopedAdmin):
    form = SlaPolicyForm
    list_display = ("name", "ordering", "business_hours", "license", "updated_at")
    list_select_related = ("license", "business_hours")
    list_filter = (("license", ScopedRelatedListFilter),)
    search_fields = ("name",)
    ordering = ("license", "ordering", "name")
    autocomplete_fields = ("license",)
    readonly_fields = _STAMPS
    service_field_names = {"businessHoursID": "business_hours"}

    def get_fields(self, request, obj=None):
        return (*_POLICY_FIELDS, *self.readonly_fields) if obj is not None else ("license", *_POLICY_FIELDS)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        values = {
            "name": data["name"],
            "ordering": data["ordering"],
            "conditions": data["conditions"] or [],
            "targets": data["targets"] or {},
            "business_hours_id": data["business_hours"].pk if data["business_hours"] else None,
        }
        if change:
            services.sla_policy_update(sla_policy=obj, **values)
            return
        obj.pk = services.sla_policy_create(license=data["license"], **values).pk

    def delete_object(self, request, obj):
        services.sla_policy_delete(sla_policy=obj)


def _clock_state(metric: dict | None, due_text: str | None, now) -> str:
    if metric is None or metric.get("target") is None:
        return "not tracked"
    if metric["left"] is not None:
        return f"held ({int(metric['left'] // 60)} min left)"
    if due_text is None:
        return "met or not started"
    moment = datetime.fromisoformat(metric["due"])
    when = date_format(moment, "Y-m-d H:i e")
    if moment <= now:
        return f"due {when} ({timesince(moment, now)} ago)"
    return f"due {when} (in {timeuntil(moment, now)})"


def sla_clock_html(ticket, now) -> str:
    """The ticket's clocks: each metric's due time, hold or met, the policy, the breaches."""
    if not ticket.sla:
        return "No SLA policy applies."
    policy = SlaPolicy.objects.filter(pk=ticket.sla["policyID"]).values_list("name", flat=True).first()
    metrics = (ticket.sla_clock or {}).get("metrics", {})
    rows = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td></tr>",
        (
            (_LABELS[name], _clock_state(metrics.get(name), ticket.sla.get(key), now))
            for name, key in DOCUMENT_KEYS.items()
        ),
    )
    breaches = ", ".join(f"{_LABELS[b['metric']]} at {b['at']}" for b in ticket.sla.get("breaches", []))
    return format_html(
        "<p>Policy: {}</p><table>{}</table><p>Breaches: {}</p>",
        policy or f"{ticket.sla['policyID']} (deleted)",
        rows,
        breaches or "none",
    )

"""The admin's typed inputs for a ticket's custom fields: one form field per active field of the license, by type,
and the `customFields` map they make (checked again by the ticket services, as every write is)."""

from __future__ import annotations

import datetime
import decimal

from django import forms

from tickets.custom_fields.models import STATUS_ACTIVE, CustomField

PREFIX = "customField__"


def _input(field: CustomField) -> forms.Field:
    common = {"label": field.display_name, "required": False, "help_text": f"customFields.{field.api_key}"}
    match field.type:
        case "multiLine":
            return forms.CharField(max_length=1000, widget=forms.Textarea(attrs={"rows": 3}), **common)
        case "date":
            return forms.DateField(
                input_formats=["%Y-%m-%d"], widget=forms.DateInput(attrs={"type": "date"}), **common
            )
        case "url":
            return forms.URLField(max_length=2000, assume_scheme="https", **common)
        case "number":
            return forms.DecimalField(**common)
        case "dropdown":
            return forms.ChoiceField(choices=[("", "—"), *[(o, o) for o in field.options]], **common)
        case "checkbox":
            return forms.NullBooleanField(**common)
    return forms.CharField(max_length=120, **common)


def inputs(license_id: int, values: dict) -> dict[str, forms.Field]:
    """`{PREFIX + apiKey: form field}` for the license's active fields, each showing the ticket's value."""
    fields = {}
    for field in CustomField.objects.filter(license_id=license_id, status=STATUS_ACTIVE).order_by("api_key"):
        form_field = _input(field)
        form_field.initial = values.get(field.api_key)
        fields[PREFIX + field.api_key] = form_field
    return fields


def _json(value):
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value


def merged(values: dict, cleaned: dict) -> dict:
    """`values` with the typed inputs of `cleaned` applied: a value set, an empty input removing the key."""
    values = dict(values)
    for name, value in cleaned.items():
        if not name.startswith(PREFIX):
            continue
        key = name[len(PREFIX) :]
        if value is None or value == "":
            values.pop(key, None)
        else:
            values[key] = _json(value)
    return values

"""Validation-only forms whose instances share their field objects.

A Django form deep-copies every field for each instance (so that rendering one form cannot change another).
The API's parameter forms are never rendered and their fields keep no state while cleaning, so the copy is pure
cost on every request: 0.7-0.8 ms of CPU for the forty parameters of ticket search (about 15% of the request,
measured in session 6, bench/README.md), so TicketFilterSet's form uses `shared_fields(form_class)`, which makes
the class's instances share its fields instead. Not worth it for small forms: copying the pagination form's four
fields costs 0.07 ms (~1.5%), and it copies them.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError


class _SharedFields(dict):
    """`base_fields` whose deep copy (made by BaseForm.__init__) is a shallow one."""

    def __deepcopy__(self, memo):
        return dict(self)


def shared_fields(form_class):
    """`form_class`, changed so that its instances share the field objects of `base_fields`."""
    form_class.base_fields = _SharedFields(form_class.base_fields)
    return form_class


def cleaned_without_form(fields, data) -> dict | None:
    """`{name: value}` as a form of `fields` (name -> form field) would clean the query `data`, without
    building the form, or None when a value is invalid (the caller then builds the form for its errors, so a
    400 says exactly what the form says). What Form.full_clean does for fields that keep no state while
    cleaning: each widget reads its value, its field cleans it, in order. A form's bound fields, error dict
    and copied fields cost more than the cleaning (bench/README.md, issue 34)."""
    cleaned = {}
    try:
        for name, field in fields.items():
            cleaned[name] = field.clean(field.widget.value_from_datadict(data, {}, name))
    except ValidationError:
        return None
    return cleaned

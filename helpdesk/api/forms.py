"""Validation-only forms whose instances share their field objects.

A Django form deep-copies every field for each instance (so that rendering one form cannot change another).
The API's parameter forms are never rendered and their fields keep no state while cleaning, so the copy is pure
cost on every request: 0.7-0.8 ms of CPU for the forty parameters of ticket search (about 15% of the request,
measured in session 6, bench/README.md), so TicketFilterSet's form uses `shared_fields(form_class)`, which makes
the class's instances share its fields instead. Not worth it for small forms: copying the pagination form's four
fields costs 0.07 ms (~1.5%), and it copies them.
"""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.forms.widgets import ChoiceWidget
from django.http import QueryDict


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
    and copied fields cost more than the cleaning (bench/README.md, issue 34).

    A parameter the query does not carry is not cleaned again on every request: its value, the same for every
    request (`_absent_values`), is copied. Measured (bench/README.md, issue 34, `search3` branch): cleaning
    the ticket search's 41 parameters for a query carrying 2 of them: the inbox search 4.13 M -> 3.75 M
    instructions (bench/cpu.py --instructions)."""
    plan = _plans.get(id(fields))
    if plan is None or plan[0] is not fields:
        plan = _plans[id(fields)] = (fields, _absent_values(fields))
    absent = plan[1]
    cleaned = {}
    try:
        for name, field in fields.items():
            if name in absent and name not in data:
                cleaned[name] = absent[name]
            else:
                cleaned[name] = field.clean(field.widget.value_from_datadict(data, {}, name))
    except ValidationError:
        return None
    return cleaned


_plans: dict[int, tuple] = {}  # id(fields) -> (fields, their absent values)
# Widgets whose value is read from the parameter of the field's own name only (absent: None, or [] for a list).
_OWN_NAME_ONLY = (
    forms.Widget.value_from_datadict,
    ChoiceWidget.value_from_datadict,
    forms.SelectMultiple.value_from_datadict,
    forms.MultipleHiddenInput.value_from_datadict,
)
_IMMUTABLE = (type(None), str, int, bool)


def _absent_values(fields) -> dict:
    """The cleaned value of each field whose widget reads only its own parameter, when the query lacks it: what
    `clean` returns for it (None, a default), kept only when it is immutable and was returned twice alike."""
    empty = QueryDict()
    absent = {}
    for name, field in fields.items():
        if type(field.widget).value_from_datadict not in _OWN_NAME_ONLY:
            continue  # (it reads other parameters: cleaned on every request)
        try:
            values = [field.clean(field.widget.value_from_datadict(empty, {}, name)) for _ in range(2)]
        except ValidationError:
            continue  # required: its error is raised on every request
        if type(values[0]) in _IMMUTABLE and values[0] == values[1]:
            absent[name] = values[0]
    return absent

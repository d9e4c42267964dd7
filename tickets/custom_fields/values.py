"""A ticket's `customFields` checked against the license's definitions: the one step every ticket write runs
(API create and update, the admin, e-mail, and whatever else calls tickets.services), `checked_values`.

Only what the write changes is checked (a key added, changed or removed), so a value stored before its
definition existed, or before the definition changed, never blocks an unrelated write. A deactivated field's
value is kept when the write leaves it out (a PATCH replaces the whole map) and refused when the write changes it.
"""

from __future__ import annotations

import datetime
import json
import math
import re

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator

from accounts.models import Agent, License
from helpdesk.context import PERSON_TYPES, current_actor
from helpdesk.errors import field_error
from tickets.custom_fields.models import STATUS_DEACTIVATED, CustomField

MAX_SINGLE_LINE = 120
MAX_MULTI_LINE = 1000
MAX_URL = 2000
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_url = URLValidator(schemes=["http", "https"])
_MISSING = object()


def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)  # 1, 1.0 and true differ


def checked_values(
    license: License,
    values: dict | None,
    *,
    before: dict,
    team_ids,
    author_agent: Agent | None,
    automation: bool = False,
) -> dict:
    """The ticket's new `customFields`: `values` (null values dropped) checked against the definitions, with
    deactivated fields' values kept; a 400 naming `customFields.<apiKey>` for an unknown key, a deactivated
    field, a role not allowed (`author_agent`'s, or `automation` for rules and macros), a field not of the
    ticket's teams (`team_ids`, after the write) or a value not of the field's type."""
    values = {key: value for key, value in (values or {}).items() if value is not None}
    changed = sorted(
        key
        for key in values.keys() | before.keys()
        if values.get(key, _MISSING) is _MISSING
        or before.get(key, _MISSING) is _MISSING
        or not _same(values[key], before[key])
    )
    if not changed:
        return values
    definitions = {
        field.api_key: field
        for field in CustomField.objects.for_license(license)
        .filter(api_key__in=changed)
        .prefetch_related("teams")
    }
    for key in changed:
        name, field, removed = f"customFields.{key}", definitions.get(key), key not in values
        if field is None:
            if removed:
                continue  # a value no definition describes may always be dropped
            raise field_error(name, "No custom field of this license has this apiKey.")
        if field.status == STATUS_DEACTIVATED:
            if removed:
                values[key] = before[key]  # kept on the ticket
                continue
            raise field_error(name, "This custom field is deactivated: kept on tickets, no longer written.")
        _check_role(field, name, author_agent, automation)
        if removed:
            continue
        field_teams = {team.pk for team in field.teams.all()}
        if field_teams and not field_teams & set(team_ids):
            raise field_error(name, "This custom field belongs to other teams than the ticket's.")
        values[key] = check_value(field, values[key], name)
    return values


def _check_role(field: CustomField, name: str, author_agent: Agent | None, automation: bool) -> None:
    if field.role_level == "owner" and author_agent is not None and not author_agent.is_owner:
        raise field_error(name, "Only owners set this custom field (roleLevel owner).")
    if field.role_level == "readOnly" and not automation:
        actor = current_actor()
        if not actor.app_name and (author_agent is not None or actor.type in PERSON_TYPES):
            raise field_error(
                name,
                "Only rules, macros and integrations' OAuth apps set this custom field (roleLevel readOnly).",
            )


def check_value(field: CustomField, value, name: str):
    """`value` if it is one of `field`'s type (the JSON form the API shows), else a 400 naming `name`."""
    kind = field.type
    if kind in ("singleLine", "multiLine", "url", "date", "dropdown"):
        if not isinstance(value, str):
            raise field_error(name, f"Expected a string ({kind}).")
        limit = {"singleLine": MAX_SINGLE_LINE, "multiLine": MAX_MULTI_LINE}.get(kind, MAX_URL)
        if len(value) > limit:
            raise field_error(name, f"At most {limit} characters ({kind}).")
    if kind == "date":
        try:
            if not DATE.fullmatch(value):
                raise ValueError
            datetime.date.fromisoformat(value)
        except ValueError:
            raise field_error(name, "Expected a date YYYY-MM-DD.") from None
    elif kind == "url":
        try:
            _url(value)
        except DjangoValidationError:
            raise field_error(name, "Expected an http(s) URL.") from None
    elif kind == "dropdown" and value not in field.options:
        raise field_error(name, f"Expected one of the field's options: {', '.join(field.options)}.")
    elif kind == "number" and (
        isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
    ):
        raise field_error(name, "Expected a number.")
    elif kind == "checkbox" and not isinstance(value, bool):
        raise field_error(name, "Expected true or false (checkbox).")
    return value

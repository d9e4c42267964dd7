"""Custom field writes (owners, through the API or the admin). The apiKey and the type are fixed at creation:
stored values would otherwise change meaning. A field in use is deactivated, never deleted."""

from __future__ import annotations

import re

from accounts.models import License
from accounts.services import same_license, stamp_create, stamp_update
from helpdesk.errors import Conflict, field_error
from helpdesk.transactions import unit_of_work
from tickets.custom_fields.models import CustomField
from tickets.models import Ticket

MAX_FIELDS = 200  # per license
MAX_OPTIONS = 100
MAX_OPTION_CHARS = 120
API_KEY = re.compile(r"[A-Za-z0-9_-]{1,100}")  # as the search's customFields.<apiKey> (tickets.filters)


def _check_options(type: str, options) -> list:
    if type != "dropdown":
        if options:
            raise field_error("options", "Only a dropdown field has options.")
        return []
    if not options:
        raise field_error("options", "A dropdown field needs at least one option.")
    if len(options) > MAX_OPTIONS or any(
        not isinstance(option, str) or not option.strip() or len(option) > MAX_OPTION_CHARS
        for option in options
    ):
        raise field_error(
            "options", f"At most {MAX_OPTIONS} non-empty strings of at most {MAX_OPTION_CHARS} characters."
        )
    if len(set(options)) != len(options):
        raise field_error("options", "Options must be unique.")
    return list(options)


def in_use(field: CustomField) -> bool:
    return Ticket.objects.for_license(field.license_id).filter(custom_fields__has_key=field.api_key).exists()


@unit_of_work
def custom_field_create(
    *,
    license: License,
    api_key: str,
    display_name: str,
    type: str,
    role_level: str = "normal",
    status: str = "active",
    options=None,
    teams=None,
) -> CustomField:
    if not API_KEY.fullmatch(api_key):
        raise field_error("apiKey", "Letters, digits, '_' and '-' only (at most 100).")
    options = _check_options(type, options)
    same_license(license, teams or [], "teamIDs")
    License.objects.select_for_update().filter(pk=license.pk).first()  # one creation at a time counts
    existing = CustomField.objects.for_license(license)
    if existing.filter(api_key=api_key).exists():
        raise field_error(
            "apiKey", f"A custom field with apiKey '{api_key}' already exists in this license.", code="unique"
        )
    if existing.count() >= MAX_FIELDS:
        raise Conflict(
            f"The limit of {MAX_FIELDS} custom fields per license is reached: deactivate or delete one first.",
            code="limit_reached",
        )
    field = CustomField(
        license=license,
        api_key=api_key,
        display_name=display_name,
        type=type,
        role_level=role_level,
        status=status,
        options=options,
    )
    stamp_create(field)
    field.save()
    if teams:
        field.teams.set(teams)
    return field


@unit_of_work
def custom_field_update(*, custom_field: CustomField, teams=None, **fields) -> CustomField:
    """PATCH: displayName, roleLevel, status, options (a dropdown's), teamIDs."""
    field = CustomField.objects.select_for_update().get(pk=custom_field.pk)
    if "options" in fields:
        fields["options"] = _check_options(field.type, fields["options"])
    for key, value in fields.items():
        setattr(field, key, value)
    stamp_update(field)
    field.save()
    if teams is not None:
        same_license(field.license, teams, "teamIDs")
        field.teams.set(teams)
    return field


@unit_of_work
def custom_field_delete(*, custom_field: CustomField) -> None:
    if in_use(custom_field):
        raise Conflict(
            f"Tickets hold values of '{custom_field.api_key}': deactivate the field instead (status).",
            code="in_use",
        )
    custom_field.delete()

"""Contact forms (`/v1/contactForms`): their writes, and what a form's public page shows.

A form always asks for the customer's e-mail, name, subject and message (BUILT_IN); its `fields` add the
owner's questions, each `{key, label, type, required, customFieldKey?}`:
- `text`, `textarea`, `email`: the answer is written under the message, as `Label: answer`;
- `customField`: the answer is the ticket's `customFields[customFieldKey]`, so `customFieldKey` names an active
  custom field of the license that the form's team's tickets carry; the input follows the custom field's type
  (a select for a dropdown, a checkbox, a date...).
The posts themselves (bots, rate limits, the ticket) are templates_app.contact_form_posts.
"""

from __future__ import annotations

import re

from django.conf import settings
from django.utils.html import escape

from accounts.models import License, Team
from accounts.services import same_license, stamp_create, stamp_update
from helpdesk.errors import field_error
from helpdesk.transactions import unit_of_work
from templates_app.models import ContactForm
from tickets.custom_fields.models import STATUS_ACTIVE, CustomField

FIELD_TYPES = ["text", "textarea", "email", "customField"]
# The inputs every form has (never an owner's key), and the two the bot checks use.
BUILT_IN = ["email", "name", "subject", "message", "attachments"]
HONEYPOT, TOKEN = "website", "formToken"
RESERVED = {*BUILT_IN, HONEYPOT, TOKEN}
KEY = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,49}")
MAX_FIELDS = 30
MAX_LABEL = 200
FIELD_KEYS = {"key", "label", "type", "required", "customFieldKey"}


def public_url(form: ContactForm) -> str:
    return f"{settings.HELPDESK_APP_URL.rstrip('/')}/forms/{form.pk}"


def embed_code(form: ContactForm) -> str:
    """The HTML a site pastes where the form should be: a script that inserts the form's page as an iframe
    (and a plain link without JavaScript)."""
    url = public_url(form)
    return (
        f'<script src="{url}/embed.js" async></script>'
        f'<noscript><a href="{url}">{escape(form.name)}</a></noscript>'
    )


def form_team(form: ContactForm) -> Team:
    return form.team if form.team_id else form.license.default_team


def _custom_field(license: License, key, team: Team, name: str) -> CustomField:
    field = (
        CustomField.objects.for_license(license)
        .filter(api_key=key, status=STATUS_ACTIVE)
        .prefetch_related("teams")
        .first()
        if isinstance(key, str)
        else None
    )
    if field is None:
        raise field_error(name, "No active custom field of this license has this apiKey.")
    teams = {t.pk for t in field.teams.all()}
    if teams and team.pk not in teams:
        raise field_error(name, "This custom field belongs to other teams than the form's.")
    return field


def _checked_fields(license: License, fields, team: Team) -> list[dict]:
    """The owner's questions, normalized: a 400 naming `fields[i].<key>` for the first wrong one."""
    if not isinstance(fields, list) or len(fields) > MAX_FIELDS:
        raise field_error("fields", f"A list of at most {MAX_FIELDS} fields.")
    checked, keys = [], set()
    for i, field in enumerate(fields):
        at = f"fields[{i}]"
        if not isinstance(field, dict):
            raise field_error(at, "An object {key, label, type, required, customFieldKey?}.")
        unknown = sorted(set(field) - FIELD_KEYS)
        if unknown:
            raise field_error(f"{at}.{unknown[0]}", "Unknown field.")
        key, label, type_ = field.get("key"), field.get("label"), field.get("type")
        if not isinstance(key, str) or not KEY.fullmatch(key):
            raise field_error(f"{at}.key", "A letter, then letters, digits, '_' or '-' (at most 50).")
        if key in RESERVED or key in keys:
            raise field_error(
                f"{at}.key", f"'{key}' is built in or already used in this form.", code="unique"
            )
        if not isinstance(label, str) or not label.strip() or len(label) > MAX_LABEL:
            raise field_error(f"{at}.label", f"A text of 1 to {MAX_LABEL} characters.")
        if type_ not in FIELD_TYPES:
            raise field_error(f"{at}.type", f"One of {', '.join(FIELD_TYPES)}.")
        required = field.get("required", False)
        if not isinstance(required, bool):
            raise field_error(f"{at}.required", "true or false.")
        entry = {"key": key, "label": label.strip(), "type": type_, "required": required}
        custom_key = field.get("customFieldKey")
        if type_ == "customField":
            entry["customFieldKey"] = _custom_field(license, custom_key, team, f"{at}.customFieldKey").api_key
        elif custom_key is not None:
            raise field_error(f"{at}.customFieldKey", "Only a field of type customField has one.")
        keys.add(key)
        checked.append(entry)
    return checked


def _check_name(name) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise field_error("name", "A text of 1 to 200 characters.")
    return name.strip()


@unit_of_work
def contact_form_create(
    *, license: License, name: str, team: Team | None = None, fields=None, active: bool = True
) -> ContactForm:
    same_license(license, [team], "teamID")
    form = ContactForm(license=license, name=_check_name(name), team=team, active=active)
    form.fields = _checked_fields(license, fields or [], form_team(form))
    stamp_create(form)
    form.save()
    return form


_MISSING = object()


@unit_of_work
def contact_form_update(
    *, contact_form: ContactForm, name=None, team=_MISSING, fields=None, active=None
) -> ContactForm:
    form = contact_form
    if name is not None:
        form.name = _check_name(name)
    if team is not _MISSING:
        same_license(form.license, [team], "teamID")
        form.team = team
    if active is not None:
        form.active = active
    if fields is not None or team is not _MISSING:
        # a new team re-checks the custom fields the form writes
        form.fields = _checked_fields(
            form.license, form.fields if fields is None else fields, form_team(form)
        )
    stamp_update(form)
    form.save()
    return form


@unit_of_work
def contact_form_delete(*, contact_form: ContactForm) -> None:
    contact_form.delete()


def page_fields(form: ContactForm) -> list[dict]:
    """The form's questions as its page shows them, each with its custom field where it has one; a question
    whose custom field has since been deactivated, deleted or moved to other teams is left out (the form
    still works)."""
    keys = [f["customFieldKey"] for f in form.fields if f.get("customFieldKey")]
    definitions = {}
    if keys:
        team_id = form.team_id or form.license.default_team_id
        for field in (
            CustomField.objects.for_license(form.license_id)
            .filter(api_key__in=keys, status=STATUS_ACTIVE)
            .prefetch_related("teams")
        ):
            teams = {t.pk for t in field.teams.all()}
            if not teams or team_id in teams:
                definitions[field.api_key] = field
    shown = []
    for field in form.fields:
        custom = definitions.get(field.get("customFieldKey")) if field["type"] == "customField" else None
        if field["type"] == "customField" and custom is None:
            continue
        shown.append({**field, "custom": custom})
    return shown

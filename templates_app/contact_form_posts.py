"""A contact form's post: the bot checks, the customer's answers checked, and the ticket made by the inbound
service (templates_app.inbound.services), which treats it as the mail it is built into.

The order (nothing is stored until the last step):
1. the rate limits, per client IP and per form (helpdesk.api.ratelimit's window counters in the cache): past
   either, 429 with Retry-After;
2. the bot checks: the honeypot input (`website`, hidden from people) must be empty, and the signed time token
   the page handed out (`formToken`: the form's ID and when the page was made, django.core.signing) must be
   this form's and at least CONTACT_FORM_MIN_SECONDS old. A bot's post is answered exactly as a person's
   (the same thanks), so that it learns nothing; nothing is stored. A token older than
   CONTACT_FORM_TOKEN_MAX_AGE_SECONDS (a page left open overnight) is not a bot: the form comes back with its
   answers and a fresh token;
3. the answers: missing or too long ones, a wrong e-mail, a custom field's value not of its type, too many or
   too large attachments: `Refused` with `{field: [message]}`, the form shown again;
4. the mail: From the customer, To the address of the form's team, the message with the answers of the text
   questions under it, the attachments, `X-Spam-Flag: YES` when the message holds more than
   CONTACT_FORM_SPAM_LINKS links; handed to the inbound service as an `Entrance(source="form")` that never
   threads into an existing ticket (anyone may type anyone's address) and sets the custom fields. So the
   blocked list sends it to spam (without acknowledgement), a trusted sender is never marked spam, and the
   acknowledgement is the one mail in gets, under the same per-sender limits.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import time
import uuid
from email.headerregistry import Address
from email.message import EmailMessage
from email.policy import SMTP

from django.conf import settings
from django.core import signing
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email

from helpdesk.api import ratelimit
from helpdesk.errors import Invalid
from templates_app.addresses import license_address, team_address
from templates_app.contact_forms import HONEYPOT, TOKEN, page_fields
from templates_app.inbound.services import Entrance, MessageTooLarge, inbound_message_receive
from templates_app.models import ContactForm
from tickets.custom_fields.values import check_value

_SALT = "helpdesk.contact-form"
LIMITS = {"email": 254, "name": 200, "subject": 250, "message": 20_000, "text": 1_000, "textarea": 10_000}
_URL = re.compile(r"https?://|www\.", re.IGNORECASE)
_LINE_BREAKS = re.compile(r"[\r\n\t]+")


class Refused(Exception):
    """The answers are not acceptable: `errors` is `{input name: [message]}` (the form shows each under its
    input; the JSON answer is the contract's 400 with them as `details`)."""

    def __init__(self, errors: dict[str, list[str]]):
        super().__init__("The form has errors.")
        self.errors = errors


@dataclasses.dataclass(frozen=True)
class Outcome:
    status: str  # "received", "bot", "limited", "expired"
    retry_after: int = 0
    ticket_id: object = None


# --- the time token --------------------------------------------------------------------------------------


def form_token(form: ContactForm, now: float | None = None) -> str:
    """What the page puts in its hidden `formToken`: the form's ID and the page's time, signed."""
    return signing.dumps({"f": str(form.pk), "t": now if now is not None else time.time()}, salt=_SALT)


def token_problem(form: ContactForm, token: str, now: float | None = None) -> str:
    """ "" for a good token; "bot" (forged, another form's, too fast) or "expired"."""
    now = time.time() if now is None else now
    try:
        data = signing.loads(token or "", salt=_SALT)
    except signing.BadSignature:
        return "bot"
    if (
        not isinstance(data, dict)
        or data.get("f") != str(form.pk)
        or not isinstance(data.get("t"), int | float)
    ):
        return "bot"
    age = now - data["t"]
    if age < settings.CONTACT_FORM_MIN_SECONDS:
        return "bot"
    return "expired" if age > settings.CONTACT_FORM_TOKEN_MAX_AGE_SECONDS else ""


# --- rate limits -----------------------------------------------------------------------------------------


def rate_limited(form: ContactForm, ip: str) -> int:
    """Counts this post; the seconds until the window ends when the IP or the form is past its limit, else 0.

    The IP first, and the form only for a post its IP may make: one address flooding the page is stopped by
    its own limit without using up the form's (which would lock every customer out)."""
    for key, most in (
        (f"ratelimit:form-ip:{ip}", settings.CONTACT_FORM_POSTS_PER_IP),
        (f"ratelimit:form:{form.pk}", settings.CONTACT_FORM_POSTS_PER_FORM),
    ):
        state = ratelimit.count_window([(key, most)] if most > 0 else [])
        if state is not None and state.exceeded:
            return ratelimit.retry_after(state)
    return 0


# --- the answers -----------------------------------------------------------------------------------------


def _text(data, key: str, errors: dict, *, required: bool, limit: int, label: str = "") -> str:
    value = data.get(key)
    value = "" if value is None else str(value).strip()
    if not value and required:
        errors[key] = [f"{label or key.capitalize()} is required."]
    elif len(value) > limit:
        errors[key] = [f"At most {limit} characters."]
    return value


def _email(value: str, key: str, errors: dict) -> str:
    if value and key not in errors:
        try:
            validate_email(value)
        except DjangoValidationError:
            errors[key] = ["Enter a valid e-mail address."]
    return value.lower()


def _custom_value(custom, raw):
    """The form's answer as the custom field's JSON value (a form sends strings; a JSON post may send more)."""
    if custom.type == "checkbox":
        return raw if isinstance(raw, bool) else str(raw).lower() in ("on", "true", "1", "yes")
    if custom.type == "number" and isinstance(raw, str):
        try:
            number = float(raw)
        except ValueError:
            return raw
        return int(number) if number.is_integer() and math.isfinite(number) else number
    return raw


def checked_answers(form: ContactForm, data, files: list) -> dict:
    """The customer's answers, checked; `Refused` naming each wrong input."""
    errors: dict[str, list[str]] = {}
    answers = {
        "email": _email(_text(data, "email", errors, required=True, limit=LIMITS["email"]), "email", errors),
        "name": _LINE_BREAKS.sub(" ", _text(data, "name", errors, required=True, limit=LIMITS["name"])),
        "subject": _LINE_BREAKS.sub(
            " ", _text(data, "subject", errors, required=True, limit=LIMITS["subject"])
        ),
        "message": _text(data, "message", errors, required=True, limit=LIMITS["message"]),
        "lines": [],
        "custom_fields": {},
    }
    for field in page_fields(form):
        key, custom = field["key"], field["custom"]
        if custom is None:
            value = _text(
                data,
                key,
                errors,
                required=field["required"],
                limit=LIMITS[field["type"]],
                label=field["label"],
            )
            if field["type"] == "email":
                value = _email(value, key, errors)
            if value:
                answers["lines"].append(f"{field['label']}: {value}")
            continue
        raw = data.get(key)
        if custom.type == "checkbox":
            value = _custom_value(custom, raw if raw is not None else False)
            if field["required"] and value is not True:
                errors[key] = [f"{field['label']} must be checked."]
            answers["custom_fields"][custom.api_key] = value
            continue
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            if field["required"]:
                errors[key] = [f"{field['label']} is required."]
            continue
        try:
            answers["custom_fields"][custom.api_key] = check_value(
                custom, _custom_value(custom, raw.strip() if isinstance(raw, str) else raw), key
            )
        except Invalid as exc:
            errors[key] = exc.details[key]
    most_files = min(settings.CONTACT_FORM_MAX_FILES, settings.UPLOAD_MAX_FILES_PER_TRANSACTION)
    if len(files) > most_files:
        errors["attachments"] = [f"At most {most_files} files."]
    elif sum(f.size for f in files) > max_bytes():
        errors["attachments"] = [f"At most {max_bytes() // (1024 * 1024)} MB of files in all."]
    if errors:
        raise Refused(errors)
    return answers


def max_bytes() -> int:
    """The files of one post, at most: the form's limit, within the API's upload limit and mail in's."""
    return min(
        settings.CONTACT_FORM_MAX_BYTES,
        settings.UPLOAD_MAX_REQUEST_BYTES,
        settings.INBOUND_MAX_MESSAGE_BYTES // 2,
    )


# --- the mail --------------------------------------------------------------------------------------------


def _mail(form: ContactForm, answers: dict, files: list, ip: str) -> bytes:
    message = EmailMessage(policy=SMTP)
    try:
        message["From"] = Address(display_name=answers["name"], addr_spec=answers["email"])
    except (ValueError, IndexError):
        raise Refused({"email": ["Enter a valid e-mail address."]}) from None
    message["To"] = _recipient(form)
    message["Subject"] = answers["subject"]
    message["Message-ID"] = f"<form.{uuid.uuid4().hex}@{settings.HELPDESK_INBOUND_DOMAIN}>"
    message["X-Contact-Form"] = str(form.pk)
    if ip:
        message["X-Originating-IP"] = f"[{ip}]"
    links = len(_URL.findall(answers["message"]))
    if settings.CONTACT_FORM_SPAM_LINKS and links > settings.CONTACT_FORM_SPAM_LINKS:
        message["X-Spam-Flag"] = "YES"
    body = answers["message"]
    if answers["lines"]:
        body += "\n\n--\n" + "\n".join(answers["lines"])
    message.set_content(body)
    for file in files:
        maintype, _, subtype = (file.content_type or "application/octet-stream").partition("/")
        if not subtype or "\n" in file.content_type:
            maintype, subtype = "application", "octet-stream"
        message.add_attachment(
            file.read(), maintype=maintype, subtype=subtype, filename=(file.name or "attachment")[:200]
        )
    return message.as_bytes()


def contact_form_post(*, form: ContactForm, data, files: list, ip: str) -> Outcome:
    """One post of `form`'s page (`data`: the inputs, `files`: uploaded files): see the module's docstring."""
    wait = rate_limited(form, ip)
    if wait:
        return Outcome("limited", retry_after=wait)
    if str(data.get(HONEYPOT) or ""):
        return Outcome("bot")
    problem = token_problem(form, str(data.get(TOKEN) or ""))
    if problem:
        return Outcome(problem)
    answers = checked_answers(form, data, files)
    raw = _mail(form, answers, files, ip)
    entrance = Entrance(source="form", threads=False, custom_fields=answers["custom_fields"] or None)
    try:
        result = inbound_message_receive(raw=raw, recipients=[_recipient(form)], entrance=entrance)
    except Invalid as exc:  # a custom field changed since the answers were checked (a rare race)
        keys = {
            f"customFields.{f['customFieldKey']}": f["key"] for f in form.fields if f.get("customFieldKey")
        }
        raise Refused(
            {keys.get(name, "message"): list(msgs) for name, msgs in (exc.details or {}).items()}
        ) from None
    except MessageTooLarge:
        raise Refused(
            {"attachments": [f"At most {max_bytes() // (1024 * 1024)} MB of files in all."]}
        ) from None
    return Outcome("received", ticket_id=result.ticket_id)


def _recipient(form: ContactForm) -> str:
    return team_address(form.license_id, form.team_id) if form.team_id else license_address(form.license_id)


def json_data(body: bytes) -> dict:
    """A JSON post's object (a form post's inputs are request.POST)."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        raise Refused({"body": ["Expected a JSON object."]}) from None
    if not isinstance(data, dict):
        raise Refused({"body": ["Expected a JSON object."]})
    return data

"""Writes of canned responses. Limits: 1,000 per scope (the whole license, or one team), 20 shortcuts each
(1 to 50 characters, no spaces), text up to 65,536 characters; a shortcut is unique in the license (case-insensitive).

The shortcut and limit checks and the write run under a per-license advisory lock on PostgreSQL (SQLite
serializes writers anyway), so two agents saving the same shortcut at once get one 201 and one 400.
"""

from __future__ import annotations

from django.db import connection

from accounts.models import Agent, License, Team
from accounts.services import same_license, stamp_create, stamp_update, transaction_bind
from helpdesk.errors import Conflict, field_error
from helpdesk.transactions import unit_of_work
from tickets import placeholders
from tickets.canned_responses.models import CannedResponse

MAX_PER_SCOPE = 1000
MAX_SHORTCUTS = 20
MAX_TEXT = 64 * 1024  # characters
# pg_advisory_xact_lock's first key for the canned responses of a license (the second key is the license).
_LOCK_SPACE = 0x43414E4E


def _lock(license: License) -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_SPACE, license.pk % 2**31])


def check_text(field: str, text: str) -> None:
    """At most 65,536 characters, and only known placeholders (shared with the macros' messages)."""
    if len(text) > MAX_TEXT:
        raise field_error(field, f"At most {MAX_TEXT} characters.", code="limit_text")
    placeholders.check(field, text)


def _check_shortcuts(license: License, shortcuts: list[str], exclude=None) -> list[str]:
    if len(shortcuts) > MAX_SHORTCUTS:
        raise field_error("shortcuts", f"At most {MAX_SHORTCUTS} shortcuts.", code="limit_shortcuts")
    seen = set()
    for shortcut in shortcuts:
        key = shortcut.lower()
        if key in seen:
            raise field_error("shortcuts", f"'{shortcut}' is given twice.", code="unique")
        seen.add(key)
    others = CannedResponse.objects.for_license(license).values_list("shortcuts", flat=True)
    if exclude is not None:
        others = others.exclude(pk=exclude.pk)
    taken = {item.lower() for listed in others for item in listed or []}
    for shortcut in shortcuts:
        if shortcut.lower() in taken:
            raise field_error(
                "shortcuts", f"The shortcut '{shortcut}' already exists in this license.", code="unique"
            )
    return shortcuts


def _check_team(license: License, team: Team | None, actor: Agent | None) -> None:
    same_license(license, [team], "teamID")
    outside = team is not None and actor is not None and not actor.is_owner
    if outside and not actor.teams.filter(pk=team.pk).exists():
        raise field_error("teamID", f"You are not a member of team '{team.pk}'.")


def _check_room(license: License, team: Team | None) -> None:
    if CannedResponse.objects.for_license(license).filter(team=team).count() >= MAX_PER_SCOPE:
        scope = "this team" if team is not None else "the whole license"
        raise Conflict(
            f"The limit of {MAX_PER_SCOPE} canned responses for {scope} is reached; delete some first.",
            code="limit_canned_responses",
        )


def _bind(canned_response: CannedResponse, transaction_id) -> None:
    """The transaction's files become the canned response's attachments."""
    if transaction_id is None:
        return
    upload = transaction_bind(
        license=canned_response.license,
        transaction_id=transaction_id,
        bound_type="cannedResponse",
        bound_id=canned_response.pk,
    )
    canned_response.attachments.set(upload.attachments.all())


@unit_of_work
def canned_response_create(
    *,
    license: License,
    text: str,
    shortcuts=(),
    team: Team | None = None,
    rich_text_obj=None,
    transaction_id=None,
    actor: Agent | None = None,
) -> CannedResponse:
    """`actor`: the agent writing through the API (a normal agent only for teams it belongs to)."""
    check_text("text", text)
    _check_team(license, team, actor)
    _lock(license)
    canned_response = CannedResponse(
        license=license,
        text=text,
        rich_text_obj=rich_text_obj,
        shortcuts=_check_shortcuts(license, list(shortcuts)),
        team=team,
    )
    _check_room(license, team)
    stamp_create(canned_response)
    canned_response.save()
    _bind(canned_response, transaction_id)
    return canned_response


_UNSET = object()


@unit_of_work
def canned_response_update(
    *,
    canned_response: CannedResponse,
    text: str | None = None,
    shortcuts=None,
    team=_UNSET,
    rich_text_obj=_UNSET,
    transaction_id=None,
    actor: Agent | None = None,
) -> CannedResponse:
    license = canned_response.license
    if text is not None:
        check_text("text", text)
        canned_response.text = text
    if team is not _UNSET and team != canned_response.team:
        _check_team(license, team, actor)
        _lock(license)
        _check_room(license, team)
        canned_response.team = team
    if rich_text_obj is not _UNSET:
        canned_response.rich_text_obj = rich_text_obj
    if shortcuts is not None:
        _lock(license)
        canned_response.shortcuts = _check_shortcuts(license, list(shortcuts), exclude=canned_response)
    stamp_update(canned_response)
    canned_response.save()
    _bind(canned_response, transaction_id)
    return canned_response


@unit_of_work
def canned_response_delete(*, canned_response: CannedResponse, actor: Agent | None = None) -> None:
    canned_response.delete()

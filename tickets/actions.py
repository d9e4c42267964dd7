"""The actions a macro (and, the same vocabulary, a rule) performs on a ticket: validated once at save, applied
in one ticket write.

An action is `{"type": ..., "value": ...}`:

| type             | value                                                                     |
|------------------|---------------------------------------------------------------------------|
| `setStatus`      | a status (`open`, `pending`, `onhold`, `solved`, `closed`)                |
| `setPriority`    | -10, 0, 10 or 20                                                          |
| `addTags`        | tag IDs                                                                   |
| `removeTags`     | tag IDs                                                                   |
| `addFollowers`   | agent IDs                                                                 |
| `assignTeam`     | a team ID, or null (no team)                                              |
| `assignAgent`    | an agent ID, or null (no agent)                                           |
| `setCustomField` | `{"apiKey", "value"}`                                                     |
| `moveToSilo`     | a silo (`tickets`, `archive`, `spam`, `trash`)                            |
| `sendMessage`    | `{"text", "isPrivate"}`: a reply to the requester, or a private note      |
| `reply`          | `{"text"}` or `{"cannedResponseID"}`, with `isPrivate`                    |
| `autoassign`     | null: the ticket goes to an eligible agent of its team (tickets.autoassign) |
| `notifyAgents`   | agent IDs, or `"assignee"` / `"team"`: an e-mail notification to them     |

`validate()` refuses, at save, an unknown type, a malformed value and an ID that is not of the license (400
naming `actions`, the action's index and its `type` or `value`), more than `MAX_ACTIONS` actions, and more
than one message (a ticket write carries one). Texts take the templates' placeholders (an unknown one is a 400).

`autoassign` and `notifyAgents` are not fields of the write: `follow_up()` does them after it, in its transaction
(an agent already assigned keeps the ticket; an `assignAgent` null before `autoassign` hands it on).

`plan()` turns the actions into the keyword arguments of `tickets.services.ticket_update` for one ticket, later
actions over earlier ones (tags and followers as sets, custom fields key by key), so that the whole list is ONE
write: one transaction, one batch of events, one `tickets.update` webhook. What can no longer apply is a 409
`action_not_applicable` naming the action (a tag, team, agent or canned response deleted since, an agent who
is not in the ticket's team, a ticket in a read-only silo) and nothing changes.
"""

from __future__ import annotations

import uuid

from accounts.models import Agent, License, Team
from helpdesk.errors import Conflict, Invalid
from tickets import placeholders
from tickets.canned_responses.models import CannedResponse
from tickets.canned_responses.services import MAX_TEXT, check_text
from tickets.models import PRIORITIES, READ_ONLY_SILOS, SILOS, STATUSES, Tag, Ticket

MAX_ACTIONS = 100
MAX_IDS = 100
MESSAGE_TYPES = ("sendMessage", "reply")
TYPES = (
    "setStatus",
    "setPriority",
    "addTags",
    "removeTags",
    "addFollowers",
    "assignTeam",
    "assignAgent",
    "setCustomField",
    "moveToSilo",
    *MESSAGE_TYPES,
    "autoassign",
    "notifyAgents",
)
FOLLOW_UPS = ("autoassign", "notifyAgents")
NOTIFY_WHOM = ("assignee", "team")


class _Bad(Exception):
    def __init__(self, key: str, message: str):
        self.key, self.message = key, message
        super().__init__(message)


def _invalid(field: str, index: int, type_, key: str, message: str) -> Invalid:
    label = f" ({type_})" if isinstance(type_, str) else ""
    return Invalid(
        f"Invalid value for '{field}[{index}].{key}'{label}: {message}",
        details={field: {str(index): {key: [message]}}},
    )


# --- validation at save -----------------------------------------------------------------------------------


def _choice(choices):
    def check(license, value):
        if isinstance(value, bool) or value not in choices:
            raise _Bad("value", f"Must be one of {', '.join(map(str, choices))}.")
        return value

    return check


def ids_of(model, noun: str):
    """A check of a list of 1 to MAX_IDS unique IDs of `model` in the license (also a rule condition's)."""

    def check(license, value):
        if not isinstance(value, list) or not value or len(value) > MAX_IDS:
            raise _Bad("value", f"Expected an array of 1 to {MAX_IDS} {noun} IDs.")
        try:
            ids = [uuid.UUID(item) for item in value if isinstance(item, str)]
        except ValueError:
            ids = []
        if len(ids) != len(value):
            raise _Bad("value", f"Expected an array of {noun} IDs (UUID strings).")
        if len(set(ids)) != len(ids):
            raise _Bad("value", "Items must be unique.")
        found = set(model.objects.for_license(license).filter(pk__in=ids).values_list("pk", flat=True))
        for pk, item in zip(ids, value, strict=True):
            if pk not in found:
                raise _Bad("value", f"'{item}' does not exist in this license.")
        return [str(pk) for pk in ids]

    return check


def _id_or_null(model):
    def check(license, value):
        if value is None:
            return None
        return ids_of(model, model.__name__.lower())(license, [value])[0]

    return check


def _null(license, value):
    if value is not None:
        raise _Bad("value", "Must be null.")
    return None


def _notify(license, value):
    if isinstance(value, str):
        if value not in NOTIFY_WHOM:
            raise _Bad("value", f"Expected an array of agent IDs, or one of {', '.join(NOTIFY_WHOM)}.")
        return value
    return ids_of(Agent, "agent")(license, value)


def _custom_field(license, value):
    if not isinstance(value, dict) or set(value) != {"apiKey", "value"}:
        raise _Bad("value", 'Expected an object {"apiKey", "value"}.')
    key = value["apiKey"]
    if not isinstance(key, str) or not 0 < len(key) <= 100:
        raise _Bad("value", "apiKey must be a string of 1 to 100 characters.")
    return {"apiKey": key, "value": value["value"]}


def _message(*, canned: bool):
    keys = {"text", "isPrivate"} | ({"cannedResponseID"} if canned else set())

    def check(license, value):
        if not isinstance(value, dict) or set(value) - keys:
            raise _Bad("value", f"Expected an object with {', '.join(sorted(keys))}.")
        if not isinstance(value.get("isPrivate", False), bool):
            raise _Bad("value", "isPrivate must be true or false.")
        out = {"isPrivate": value.get("isPrivate", False)}
        if canned and ("text" in value) == ("cannedResponseID" in value):
            raise _Bad("value", "Give either text or cannedResponseID.")
        if "cannedResponseID" in value:
            out["cannedResponseID"] = ids_of(CannedResponse, "canned response")(
                license, [value["cannedResponseID"]]
            )[0]
            return out
        text = value.get("text")
        if not isinstance(text, str) or not text.strip():
            raise _Bad("value", "text must be a non-empty string.")
        try:
            check_text("value", text)
        except Invalid as exc:
            raise _Bad("value", exc.details["value"][0]) from None
        out["text"] = text
        return out

    return check


_CHECKS = {
    "setStatus": _choice(STATUSES),
    "setPriority": _choice(PRIORITIES),
    "addTags": ids_of(Tag, "tag"),
    "removeTags": ids_of(Tag, "tag"),
    "addFollowers": ids_of(Agent, "agent"),
    "assignTeam": _id_or_null(Team),
    "assignAgent": _id_or_null(Agent),
    "setCustomField": _custom_field,
    "moveToSilo": _choice(SILOS),
    "sendMessage": _message(canned=False),
    "reply": _message(canned=True),
    "autoassign": _null,
    "notifyAgents": _notify,
}


def _check_visible(value: dict, agent) -> None:
    """A normal agent's own list names only canned responses it sees (the license's, or its teams')."""
    if agent is None or agent.is_owner or "cannedResponseID" not in value:
        return
    team_id = CannedResponse.objects.values_list("team_id", flat=True).get(pk=value["cannedResponseID"])
    if team_id is not None and not agent.teams.filter(pk=team_id).exists():
        raise _Bad("value", f"Canned response '{value['cannedResponseID']}' is of a team you are not in.")


def validate(*, license: License, actions, field: str = "actions", types=TYPES, agent=None) -> list[dict]:
    """The actions, normalized (IDs as strings), or a 400 naming the action's index and key. `agent`: whose
    own list it is (a private macro's), which names only the canned responses it sees."""
    if not isinstance(actions, list):
        raise Invalid(
            f"Invalid value for '{field}': Expected an array.", details={field: ["Expected an array."]}
        )
    if len(actions) > MAX_ACTIONS:
        message = f"At most {MAX_ACTIONS} actions."
        raise Invalid(
            f"Invalid value for '{field}': {message}", code="limit_actions", details={field: [message]}
        )
    normalized, message_at = [], None
    for index, action in enumerate(actions):
        type_ = action.get("type") if isinstance(action, dict) else None
        if not isinstance(action, dict) or set(action) - {"type", "value"}:
            raise _invalid(field, index, type_, "type", 'Expected an object {"type", "value"}.')
        if type_ not in types:
            raise _invalid(field, index, type_, "type", f"Unknown action type; one of {', '.join(types)}.")
        if type_ in MESSAGE_TYPES:
            if message_at is not None:
                raise _invalid(
                    field, index, type_, "type", f"One message per list (action {message_at} is one)."
                )
            message_at = index
        try:
            value = _CHECKS[type_](license, action.get("value"))
            if type_ == "reply":
                _check_visible(value, agent)
        except _Bad as bad:
            raise _invalid(field, index, type_, bad.key, bad.message) from None
        normalized.append({"type": type_, "value": value})
    return normalized


# --- the schema (OpenAPI) -----------------------------------------------------------------------------------

# The pattern too: a generator of examples (the fuzzer's) may not honour `format`.
_UUID = {
    "type": "string",
    "format": "uuid",
    "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
}
_IDS = {"type": "array", "items": _UUID, "minItems": 1, "maxItems": MAX_IDS, "uniqueItems": True}
_TEXT = {"type": "string", "minLength": 1, "maxLength": MAX_TEXT, "pattern": r"\S"}
_PRIVATE = {"type": "boolean"}


def _object(required: list[str], **properties) -> dict:
    return {"type": "object", "required": required, "additionalProperties": False, "properties": properties}


_VALUE_SCHEMAS = {
    "setStatus": {"type": "string", "enum": STATUSES},
    "setPriority": {"type": "integer", "enum": PRIORITIES},
    "addTags": _IDS,
    "removeTags": _IDS,
    "addFollowers": _IDS,
    "assignTeam": {**_UUID, "nullable": True},
    "assignAgent": {**_UUID, "nullable": True},
    "setCustomField": _object(
        ["apiKey", "value"], apiKey={"type": "string", "minLength": 1, "maxLength": 100}, value={}
    ),
    "moveToSilo": {"type": "string", "enum": SILOS},
    "sendMessage": _object(["text"], text=_TEXT, isPrivate=_PRIVATE),
    "reply": {
        "oneOf": [
            _object(["text"], text=_TEXT, isPrivate=_PRIVATE),
            _object(["cannedResponseID"], cannedResponseID=_UUID, isPrivate=_PRIVATE),
        ]
    },
    "autoassign": {"type": "string", "nullable": True, "enum": [None]},
    "notifyAgents": {"oneOf": [_IDS, {"type": "string", "enum": list(NOTIFY_WHOM)}]},
}


def json_schema(types=TYPES) -> dict:
    """The OpenAPI schema of a list of actions: one object shape per type."""
    return {
        "type": "array",
        "maxItems": MAX_ACTIONS,
        "items": {
            "oneOf": [
                _object(
                    ["type", "value"], type={"type": "string", "enum": [type_]}, value=_VALUE_SCHEMAS[type_]
                )
                for type_ in types
            ]
        },
    }


# --- application ----------------------------------------------------------------------------------------------


def _cannot(index: int, action: dict, why: str) -> Conflict:
    return Conflict(
        f"Action {index} ({action['type']}) cannot apply: {why}",
        code="action_not_applicable",
        details={"actions": {str(index): {"value": [why]}}},
    )


def _found(model, license_id: int, index: int, action: dict, ids: list[str], noun: str) -> list:
    found = model.objects.filter(license_id=license_id).in_bulk(ids)
    missing = [pk for pk in ids if uuid.UUID(pk) not in found]
    if missing:
        raise _cannot(index, action, f"{noun} '{missing[0]}' no longer exists.")
    return [found[uuid.UUID(pk)] for pk in ids]


class _Plan:
    """The ticket_update keyword arguments the actions add up to, built action by action."""

    def __init__(self, ticket: Ticket, agent):
        self.ticket, self.agent = ticket, agent
        self.fields: dict = {}
        self.assignment: dict = {}
        self.relations: dict = {}
        self.message = None
        self.agent_at = None  # the assignAgent action, checked against the final team

    def related(self, name: str) -> dict:
        if name not in self.relations:
            self.relations[name] = {obj.pk: obj for obj in getattr(self.ticket, name).all()}
        return self.relations[name]

    def add(self, index: int, action: dict) -> None:
        type_, value, license_id = action["type"], action["value"], self.ticket.license_id
        if type_ == "setStatus":
            self.fields["status"] = value
        elif type_ == "setPriority":
            self.fields["priority"] = value
        elif type_ == "moveToSilo":
            self.fields["silo"] = value
        elif type_ == "setCustomField":
            custom = dict(self.fields.get("custom_fields", self.ticket.custom_fields or {}))
            custom[value["apiKey"]] = value["value"]
            self.fields["custom_fields"] = custom
        elif type_ in ("addTags", "removeTags"):
            tags, current = _found(Tag, license_id, index, action, value, "Tag"), self.related("tags")
            for tag in tags:
                current[tag.pk] = tag
                if type_ == "removeTags":
                    del current[tag.pk]
        elif type_ == "addFollowers":
            followers = _found(Agent, license_id, index, action, value, "Agent")
            self.related("followers").update({agent.pk: agent for agent in followers})
        elif type_ == "assignTeam":
            self.assignment["team"] = value and _found(Team, license_id, index, action, [value], "Team")[0]
        elif type_ == "assignAgent":
            self.assignment["agent"] = value and _found(Agent, license_id, index, action, [value], "Agent")[0]
            self.agent_at = (index, action)
        elif type_ == "notifyAgents":
            if isinstance(value, list):
                _found(Agent, license_id, index, action, value, "Agent")
        elif type_ != "autoassign":
            self.message = {"text": self._text(index, action), "isPrivate": value["isPrivate"]}

    def _text(self, index: int, action: dict) -> str:
        value = action["value"]
        if "cannedResponseID" in value:
            source = _found(
                CannedResponse,
                self.ticket.license_id,
                index,
                action,
                [value["cannedResponseID"]],
                "Canned response",
            )[0].text
        else:
            source = value["text"]
        text, _html = placeholders.render(text=source, ticket=self.ticket, agent=self.agent)
        return text

    def check_agent_in_team(self) -> None:
        agent = self.assignment.get("agent")
        if agent is None or self.agent_at is None:
            return
        team = self.assignment.get("team", self.ticket.assignment_team)
        if team is not None and not agent.teams.filter(pk=team.pk).exists():
            index, action = self.agent_at
            raise _cannot(index, action, f"Agent '{agent.pk}' is not a member of team '{team.name}'.")

    def kwargs(self) -> dict:
        kwargs = dict(self.fields)
        if self.assignment:
            kwargs["assignment"] = self.assignment
        for name, objects in self.relations.items():
            kwargs[name] = list(objects.values())
        if self.message is not None:
            kwargs["message"] = self.message
        return kwargs


def plan(*, ticket: Ticket, actions: list[dict], agent=None) -> dict:
    """The keyword arguments of ONE `ticket_update` doing every action on `ticket` (its row locked by the
    caller), or a 409 naming the first action that cannot apply."""
    if ticket.silo in READ_ONLY_SILOS:
        for index, action in enumerate(actions):
            if action["type"] != "moveToSilo":
                raise _cannot(
                    index,
                    action,
                    f"the ticket is in '{ticket.silo}', which is read-only; move it back first.",
                )
    steps = _Plan(ticket, agent)
    for index, action in enumerate(actions):
        steps.add(index, action)
    steps.check_agent_in_team()
    return steps.kwargs()


def canned_files_transaction(*, ticket: Ticket, actions: list[dict]):
    """The ID of a new attachment transaction holding copies of the files of the `reply` action's canned
    response (None when it has none): the message carries them like an agent's uploaded files (copies, so that
    the ticket's purge never deletes the canned response's own). The upload quotas apply to the copies."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tickets.services import attachments_add, transaction_create

    canned_id = next(
        (a["value"].get("cannedResponseID") for a in actions if a["type"] == "reply"),
        None,
    )
    if canned_id is None:
        return None
    links = CannedResponse.attachments.through.objects.filter(cannedresponse_id=canned_id)  # one statement
    files = [
        link.attachment for link in links.select_related("attachment").order_by("attachment__created_at")
    ]
    if not files:
        return None
    txn = transaction_create(license=ticket.license)
    copies = []
    for attachment in files:
        with attachment.file.open("rb") as handle:
            copies.append(
                SimpleUploadedFile(attachment.name, handle.read(), content_type=attachment.content_type)
            )
    attachments_add(txn=txn, files=copies)
    return txn.pk


def follow_up(*, ticket: Ticket, actions: list[dict], by_agent=None) -> Ticket:
    """After the write of `plan()`'s changes, in its transaction: `autoassign`, then `notifyAgents` (the e-mail
    app notifies through `tickets.signals.agents_notified`). Returns the ticket as it is then."""
    from tickets.autoassign import autoassign
    from tickets.events import History
    from tickets.signals import agents_notified

    types = {action["type"] for action in actions}
    if "autoassign" in types and ticket.assignment_agent_id is None:
        history = History(ticket)
        if autoassign(ticket, history=history) is not None:
            history.save()
    for action in actions:
        if action["type"] == "notifyAgents":
            value = action["value"]
            if value == "assignee":
                agents = [ticket.assignment_agent] if ticket.assignment_agent_id else []
            elif value == "team":
                agents = None  # the e-mail app knows which team answers the ticket
            else:
                agents = list(Agent.objects.filter(license_id=ticket.license_id, pk__in=value))
            agents_notified.send(sender=Ticket, ticket=ticket, agents=agents, by_agent=by_agent)
    return ticket

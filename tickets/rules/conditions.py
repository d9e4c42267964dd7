"""A rule's conditions (`triggers`): validated at save, evaluated against a ticket and the events of a write.

A condition is `{"type", "op", "value"}` (`customField` adds `apiKey`, `hoursSince` adds `field`):

| type             | value                                  | ops                                     |
|------------------|----------------------------------------|-----------------------------------------|
| `event`          | one of EVENTS                          | is, isNot                               |
| `status`         | a status                               | is, isNot                               |
| `priority`       | -10, 0, 10, 20                         | is, isNot, gt, lt                       |
| `silo`           | a silo                                 | is, isNot                               |
| `teamIDs`        | team IDs                               | contains (any of them), notContains     |
| `tagIDs`         | tag IDs                                | contains (any of them), notContains     |
| `agentID`        | an agent ID, or null (unassigned)      | is, isNot                               |
| `subject`, `messageText`, `requesterEmail`, `language` | a string (case-insensitive) | is, isNot, contains, notContains |
| `customField`    | any JSON value                         | is, isNot, contains, notContains, gt, lt |
| `source`         | api, email, admin, system, web, form (the write's) | is, isNot                   |
| `hoursSince`     | hours (a number > 0), + `field`        | gt, lt                                  |
| `slaBreached`    | a metric of SLA_METRICS, or `any`      | is (it breached), isNot                 |

`validate()` refuses an unknown type, op or field and an ID that is not of the license with a 400 naming
`triggers`, the index and the key. `matches()` reads only the ticket (and its relations, once) and the events.
"""

from __future__ import annotations

from datetime import timedelta

from accounts.models import Agent, License, Team
from helpdesk.errors import Invalid
from tickets import actions as ticket_actions
from tickets.actions import _Bad
from tickets.models import PRIORITIES, SILOS, SOURCE_TYPES, STATUSES, Tag

MAX_CONDITIONS = 50
EVENTS = (
    "created", "statusChanged", "priorityChanged", "assignmentChanged", "clientMessage", "agentMessage",
    "tagsChanged",
)  # fmt: skip
SLA_METRICS = ("firstResponse", "nextResponse", "resolution", "any")  # tickets.sla: the ticket's breaches
TIME_FIELDS = {
    "createdAt": "created_at",
    "updatedAt": "updated_at",
    "lastMessageAt": "last_message_at",
    "statusChangedAt": "status_changed_at",
    "lastClientMessageAt": "last_client_message_at",
    "lastAgentMessageAt": "last_agent_message_at",
}
IS = ("is", "isNot")
TEXT = ("is", "isNot", "contains", "notContains")
ORDER = ("is", "isNot", "gt", "lt")
SET = ("contains", "notContains")
OPS = {
    "event": IS,
    "status": IS,
    "priority": ORDER,
    "silo": IS,
    "teamIDs": SET,
    "tagIDs": SET,
    "agentID": IS,
    "subject": TEXT,
    "messageText": TEXT,
    "requesterEmail": TEXT,
    "language": TEXT,
    "customField": ("is", "isNot", "contains", "notContains", "gt", "lt"),
    "source": IS,
    "hoursSince": ("gt", "lt"),
    "slaBreached": IS,
}
TYPES = tuple(OPS)


def _invalid(index: int, key: str, message: str) -> Invalid:
    return Invalid(
        f"Invalid value for 'triggers[{index}].{key}': {message}",
        details={"triggers": {str(index): {key: [message]}}},
    )


def _ids(license: License, model, value, noun: str) -> list[str]:
    """The macros' check of a list of IDs (tickets.actions), its refusal naming what is missing."""
    try:
        return ticket_actions.ids_of(model, noun)(license, value)
    except _Bad as bad:
        if bad.message.startswith("'"):
            raise _Bad("value", f"{noun.capitalize()} {bad.message}") from None
        raise


def _value(license: License, condition: dict):
    type_, value = condition["type"], condition.get("value")
    choices = {
        "event": EVENTS,
        "status": STATUSES,
        "silo": SILOS,
        "source": SOURCE_TYPES,
        "priority": PRIORITIES,
        "slaBreached": SLA_METRICS,
    }
    if type_ in choices:
        if isinstance(value, bool) or value not in choices[type_]:
            raise _Bad("value", f"Must be one of {', '.join(map(str, choices[type_]))}.")
        return value
    if type_ == "teamIDs":
        return _ids(license, Team, value, "team")
    if type_ == "tagIDs":
        return _ids(license, Tag, value, "tag")
    if type_ == "agentID":
        return None if value is None else _ids(license, Agent, [value], "agent")[0]
    if type_ == "hoursSince":
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 24 * 365 * 10:
            raise _Bad("value", "Expected a number of hours above 0 (at most ten years).")
        return value
    if type_ == "customField":
        return value
    if not isinstance(value, str) or not value or len(value) > 1000:
        raise _Bad("value", "Expected a string of 1 to 1000 characters.")
    return value


def validate(*, license: License, triggers) -> list[dict]:
    """The conditions, normalized, or a 400 naming `triggers`, the index and the key."""
    if not isinstance(triggers, list):
        raise Invalid(
            "Invalid value for 'triggers': Expected an array.", details={"triggers": ["Expected an array."]}
        )
    if len(triggers) > MAX_CONDITIONS:
        message = f"At most {MAX_CONDITIONS} conditions."
        raise Invalid(f"Invalid value for 'triggers': {message}", details={"triggers": [message]})
    normalized = []
    for index, condition in enumerate(triggers):
        try:
            normalized.append(_condition(license, condition))
        except _Bad as bad:
            raise _invalid(index, bad.key, bad.message) from None
    kinds = {c["type"] for c in normalized}
    times = [c for c in normalized if c["type"] == "hoursSince"]
    if times and not any(c["op"] == "gt" for c in times):
        index = normalized.index(times[0])
        raise _invalid(
            index, "op", "A time rule needs an hoursSince condition with gt (when its time has come)."
        )
    if "hoursSince" in kinds and "event" in kinds:
        index = next(i for i, c in enumerate(normalized) if c["type"] == "event")
        raise _invalid(index, "type", "A time rule (hoursSince) has no event condition: the sweep runs it.")
    return normalized


def _condition(license: License, condition) -> dict:
    if not isinstance(condition, dict):
        raise _Bad("type", 'Expected an object {"type", "op", "value"}.')
    type_ = condition.get("type")
    if type_ not in OPS:
        raise _Bad("type", f"Unknown condition type; one of {', '.join(TYPES)}.")
    allowed = {"type", "op", "value"} | {"customField": {"apiKey"}, "hoursSince": {"field"}}.get(type_, set())
    unknown = sorted(set(condition) - allowed)
    if unknown:
        raise _Bad(unknown[0], f"Unknown key for a {type_} condition.")
    if condition.get("op") not in OPS[type_]:
        raise _Bad("op", f"Must be one of {', '.join(OPS[type_])} for {type_}.")
    out = {"type": type_, "op": condition["op"]}
    if type_ == "customField":
        key = condition.get("apiKey")
        if not isinstance(key, str) or not 0 < len(key) <= 100:
            raise _Bad("apiKey", "Expected a string of 1 to 100 characters.")
        out["apiKey"] = key
    if type_ == "hoursSince":
        if condition.get("field") not in TIME_FIELDS:
            raise _Bad("field", f"Must be one of {', '.join(TIME_FIELDS)}.")
        out["field"] = condition["field"]
    out["value"] = _value(license, condition)
    return out


def is_time_rule(triggers: list[dict]) -> bool:
    return any(condition["type"] == "hoursSince" for condition in triggers)


# --- evaluation -----------------------------------------------------------------------------------------------


class Facts:
    """What the conditions read of one ticket and one write, each read at most once."""

    def __init__(self, ticket, events, *, created: bool = False, now=None):
        self.ticket, self.events, self.created, self.now = ticket, events, created, now
        self._cache: dict = {}

    def _once(self, key, read):
        if key not in self._cache:
            self._cache[key] = read()
        return self._cache[key]

    def event_kinds(self) -> set[str]:
        return self._once("events", self._event_kinds)

    def _event_kinds(self) -> set[str]:
        kinds = {"created"} if self.created else set()
        simple = {"status": "statusChanged", "priority": "priorityChanged", "assignment": "assignmentChanged"}
        for event in self.events:
            if event.type in simple:
                kinds.add(simple[event.type])
            elif event.type == "tags":
                kinds.add("tagsChanged")
            elif event.type == "message" and event.message is not None:
                if event.message.author_type == "client":
                    kinds.add("clientMessage")
                elif event.message.author_type == "agent":
                    kinds.add("agentMessage")
        return kinds

    def source(self) -> str:
        return self.events[0].source_type if self.events else "system"

    def ids(self, name: str) -> set[str]:
        found = self._cache.get(
            name
        )  # no closure per call: every rule's ID condition asks (bench/rules_cost.py)
        if found is None:
            found = self._cache[name] = {
                str(pk) for pk in getattr(self.ticket, name).values_list("pk", flat=True)
            }
        return found

    def message_text(self) -> str:
        texts = [e.message.text for e in self.events if e.type == "message" and e.message is not None]
        if texts:
            return "\n".join(texts)
        latest = self._once(
            "message",
            lambda: self.ticket.messages.order_by("-created_at").values_list("text", flat=True).first(),
        )
        return latest or ""


def _compare(op: str, actual, expected) -> bool:
    if op == "is":
        return actual == expected
    if op == "isNot":
        return actual != expected
    try:
        if op == "gt":
            return actual is not None and actual > expected
        if op == "lt":
            return actual is not None and actual < expected
    except TypeError:
        return False
    contained = isinstance(actual, str | list) and isinstance(expected, str) and expected in actual
    return contained if op == "contains" else not contained


def _text(op: str, actual: str, expected: str) -> bool:
    return _compare(op, (actual or "").casefold(), expected.casefold())


def holds(condition: dict, facts: Facts) -> bool:
    type_, op, value, ticket = condition["type"], condition["op"], condition["value"], facts.ticket
    if type_ == "event":
        return (value in facts.event_kinds()) == (op == "is")
    if type_ in ("status", "priority", "silo", "language"):
        actual = getattr(ticket, type_)
        return _text(op, actual, value) if type_ == "language" else _compare(op, actual, value)
    if type_ in ("teamIDs", "tagIDs"):
        found = not facts.ids("teams" if type_ == "teamIDs" else "tags").isdisjoint(value)
        return found if op == "contains" else not found
    if type_ == "agentID":
        actual = str(ticket.assignment_agent_id) if ticket.assignment_agent_id else None
        return _compare(op, actual, value)
    if type_ == "subject":
        return _text(op, ticket.subject, value)
    if type_ == "requesterEmail":
        return _text(op, ticket.requester_email, value)
    if type_ == "messageText":
        return _text(op, facts.message_text(), value)
    if type_ == "source":
        return _compare(op, facts.source(), value)
    if type_ == "customField":
        return _compare(op, (ticket.custom_fields or {}).get(condition["apiKey"]), value)
    if type_ == "slaBreached":
        metrics = {breach["metric"] for breach in (ticket.sla or {}).get("breaches", [])}
        return bool(metrics if value == "any" else value in metrics) == (op == "is")
    # hoursSince
    moment = getattr(ticket, TIME_FIELDS[condition["field"]])
    if moment is None or facts.now is None:
        return False
    elapsed = facts.now - moment
    limit = timedelta(hours=value)
    return elapsed >= limit if op == "gt" else elapsed < limit


def matches(rule, facts: Facts) -> bool:
    results = (holds(condition, facts) for condition in rule.triggers)
    return any(results) if rule.quantifier == "any" else all(results)


def json_schema() -> dict:
    """The OpenAPI schema of a list of conditions: one object shape per type, its ops and its value."""
    from tickets.actions import _IDS, _UUID, _object

    text = {"type": "string", "minLength": 1, "maxLength": 1000}
    values = {
        "event": {"type": "string", "enum": list(EVENTS)},
        "status": {"type": "string", "enum": list(STATUSES)},
        "silo": {"type": "string", "enum": list(SILOS)},
        "source": {"type": "string", "enum": list(SOURCE_TYPES)},
        "priority": {"type": "integer", "enum": list(PRIORITIES)},
        "teamIDs": _IDS,
        "tagIDs": _IDS,
        "agentID": {**_UUID, "nullable": True},
        "subject": text,
        "messageText": text,
        "requesterEmail": text,
        "language": text,
        "slaBreached": {"type": "string", "enum": list(SLA_METRICS)},
        "hoursSince": {"type": "number", "exclusiveMinimum": True, "minimum": 0, "maximum": 24 * 365 * 10},
    }
    shapes = []
    for type_, ops in OPS.items():
        extra, required = {}, ["type", "op", "value"]
        if type_ == "customField":
            extra["apiKey"] = {"type": "string", "minLength": 1, "maxLength": 100}
            required.append("apiKey")
        if type_ == "hoursSince":
            extra["field"] = {"type": "string", "enum": list(TIME_FIELDS)}
            required.append("field")
        shapes.append(
            _object(
                required,
                type={"type": "string", "enum": [type_]},
                op={"type": "string", "enum": list(ops)},
                value=values.get(type_, {}),
                **extra,
            )
        )
    return {"type": "array", "maxItems": MAX_CONDITIONS, "items": {"oneOf": shapes}}

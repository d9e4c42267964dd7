"""Rules at work: inside the write that triggered them, by the time sweep, and dry (the test endpoint).

Every ticket write records its events through tickets.events.History, which sends `events_recorded` inside the
write's transaction; `on_events_recorded` collects the events per ticket on the unit of work
(helpdesk.transactions) and registers one before-commit callback per ticket: the pass runs once the write is
complete (whatever the entrance: API, admin, mail in, macros, tasks), still inside its transaction, so the write and
what the rules do commit or roll back together, and the response, read after it, shows the ticket as the rules left
it.

A pass evaluates the license's active event rules once each, in `ordering`: a rule that fires changes the ticket
through ONE `tickets.services.ticket_update` (tickets.actions.plan), acting as the system; the events of that
change join the pass, so later rules see them, and no rule is evaluated twice (a pass is at most one evaluation per
rule: no cycle can run away). A firing locks the rule's row of RuleFiring for the ticket (unique per rule and
ticket), so `limitPerTicket` holds under retries and concurrent writes; it writes a `rule` event (author type
`system`, `{ruleID, name}`) and adds one to `useCounter`. An action that cannot apply (its tag deleted since, a
read-only silo, a team's tag reminder) rolls back that rule's changes alone (a savepoint) and writes a `rule` event
with `skipped`: the reason; the write itself succeeds. A skipped run counts towards `limitPerTicket` (so a broken
rule does not add an event to every later write) but not towards `useCounter`.

A rule never answers an automatic mail: when a client message of the pass is marked `no_auto_reply` (by the
inbound service: an auto-reply, a bulk or null-return-path mail, past the storm limits), a public `sendMessage`
is left out (the `rule` event's `messageSkipped` says why) and the rule's other actions apply; a rule with nothing
else to do is skipped. Private notes are still written.
"""

from __future__ import annotations

import dataclasses

from django.db.models import F
from django.utils import timezone

from helpdesk import context
from helpdesk.errors import DomainError
from helpdesk.transactions import before_commit, current_unit, unit_of_work
from helpdesk.versioned import VersionedCopies
from tickets import actions as ticket_actions
from tickets.events import Author, History
from tickets.models import Message, Ticket
from tickets.rules.conditions import Facts, holds, matches
from tickets.rules.models import Rule, RuleFiring
from tickets.services import ticket_update

_STATE = "tickets.rules"
SYSTEM_AUTHOR = Author("system", None, "System")


@dataclasses.dataclass
class _Pending:
    license_id: int
    created: bool = False
    events: list = dataclasses.field(default_factory=list)


def _state() -> dict | None:
    unit = current_unit()
    if unit is None:
        return None
    return unit.state.setdefault(_STATE, {"pending": {}, "running": None})


def on_events_recorded(sender, *, ticket, events, created=False, **kwargs) -> None:
    """Receiver of `tickets.signals.events_recorded`: the events join the ticket's pass (the one running, or the
    one to run before the commit)."""
    state = _state()
    if state is None:
        return
    running = state["running"]
    if running is not None and running.ticket_id == ticket.pk:
        running.events.extend(events)
        return
    pending = state["pending"].get(ticket.pk)
    if pending is None:
        pending = state["pending"][ticket.pk] = _Pending(ticket.license_id)
        before_commit(lambda pk=ticket.pk: _run(pk))
    pending.created |= created
    pending.events.extend(events)


# --- the license's event rules, read once per process and version of them ---------------------------------
#
# Reading and decoding a license's rules on every write cost ~40 us of CPU per rule (200 rules: ~8 ms a write,
# bench/rules_cost.py): each process keeps them per license and version (helpdesk.versioned).

_copies = VersionedCopies("rules")


@dataclasses.dataclass(frozen=True)
class _Compiled:
    rule: Rule
    # The event the rule waits for (an `all` rule with `event is X`): a write without it skips the rule unread.
    needs: str | None


def _compile(rule: Rule) -> _Compiled:
    needs = None
    if rule.quantifier == "all":
        needs = next((c["value"] for c in rule.triggers if c["type"] == "event" and c["op"] == "is"), None)
    return _Compiled(rule, needs)


def rules_changed(license_id: int) -> None:
    """A rule of the license changed: every process reads them again (called by Rule's save and delete)."""
    _copies.changed(license_id)


def on_rule_saved(sender, *, instance, **kwargs) -> None:
    """Receiver of Rule's post_save and post_delete (services, admin, a license's deletion alike)."""
    rules_changed(instance.license_id)


def event_rules(license_id: int) -> list[_Compiled]:
    """The license's active event rules in `ordering`, compiled; from this process's copy when still current."""

    def load():
        rules = Rule.objects.filter(license_id=license_id, active=True, is_time_rule=False).order_by(
            "ordering", "created_at", "id"
        )
        return [_compile(rule) for rule in rules]

    return _copies.get(license_id, load)


def _run(ticket_id) -> None:
    state = _state()
    pending = state["pending"].pop(ticket_id)
    rules = event_rules(pending.license_id)
    # A pass only when a rule may hold on these events (a rule's own changes bring more, but only if one fires).
    kinds = Facts(None, pending.events, created=pending.created).event_kinds()
    if any(c.needs is None or c.needs in kinds for c in rules):
        run_pass(ticket_id, rules, pending.events, created=pending.created)


@dataclasses.dataclass
class _Pass:
    ticket_id: object
    events: list


def run_pass(
    ticket_id, rules: list[_Compiled], events: list, *, created: bool = False, now=None
) -> list[Rule]:
    """Evaluate `rules` (in order) once each on the ticket with the write's `events`; returns those that fired."""
    state = _state()
    now = now or timezone.now()
    current = _Pass(ticket_id, list(events))
    outer, state["running"] = state["running"], current
    fired = []
    try:
        ticket = Ticket.objects.select_related("license").get(pk=ticket_id)
        facts = Facts(ticket, current.events, created=created, now=now)
        for compiled in rules:
            rule = compiled.rule
            if compiled.needs is not None and compiled.needs not in facts.event_kinds():
                continue
            if not matches(rule, facts):
                continue
            if fire(rule, ticket, now, current):
                fired.append(rule)
            ticket = Ticket.objects.select_related("license").get(pk=ticket_id)
            facts = Facts(ticket, current.events, created=created, now=now)
    finally:
        state["running"] = outer
    return fired


def _record(ticket: Ticket, rule: Rule, skipped: str = "", message_skipped: str = "") -> None:
    history = History(ticket)
    payload = {"ruleID": str(rule.pk), "name": rule.name}
    if skipped:
        payload["skipped"] = skipped
    if message_skipped:
        payload["messageSkipped"] = message_skipped
    history.add("rule", SYSTEM_AUTHOR, payload=payload)
    history.save()


def fire(rule: Rule, ticket: Ticket, now, current: _Pass | None = None) -> bool:
    """Fire `rule` on the ticket unless it reached its limit there; True when it fired (not skipped).

    `current`: the pass this firing is part of (its events join it); None for the time sweep, whose changes then
    run the event rules like any other write."""
    firing, _ = RuleFiring.objects.select_for_update().get_or_create(
        rule=rule, ticket_id=ticket.pk, defaults={"license_id": ticket.license_id}
    )
    if firing.count >= rule.limit_per_ticket:
        return False
    firing.count += 1
    firing.last_fired_at = now
    firing.save(update_fields=["count", "last_fired_at"])
    kept = len(current.events) if current is not None else 0
    actions, left_out = _answerable(rule.actions, current)
    if left_out and not actions:
        _record(ticket, rule, skipped=left_out)
        return False
    with context.acting_as(context.SYSTEM):
        try:
            with unit_of_work():  # a savepoint: a rule that cannot apply rolls back alone
                locked = Ticket.objects.select_for_update(no_key=True, of=("self",)).select_related("license")
                locked = locked.get(pk=ticket.pk)
                changes = ticket_actions.plan(ticket=locked, actions=actions)
                if changes:
                    locked = ticket_update(ticket=locked, automation=True, **changes)
                ticket_actions.follow_up(ticket=locked, actions=actions)
        except DomainError as error:
            if current is not None:
                del current.events[kept:]
            _record(ticket, rule, skipped=error.message)
            return False
        _record(ticket, rule, message_skipped=left_out)
    # Not a change of the rule (no audit entry, no rules.update webhook): the engine's count of its firings.
    Rule.objects.filter(pk=rule.pk).update(use_counter=F("use_counter") + 1)
    rule.use_counter += 1
    return True


def _answerable(actions: list[dict], current: _Pass | None) -> tuple[list[dict], str]:
    """The actions without a public message when the pass's client message must not be answered automatically,
    and why ("" when nothing is left out). One query, only for a rule that would answer."""
    public = [a for a in actions if a["type"] == "sendMessage" and not a["value"].get("isPrivate")]
    if not public or current is None:
        return actions, ""
    ids = [
        e.message.pk
        for e in current.events
        if e.type == "message" and e.message is not None and e.message.author_type == "client"
    ]
    if not ids:
        return actions, ""
    why = Message.objects.filter(pk__in=ids).exclude(no_auto_reply="").values_list("no_auto_reply", flat=True)
    why = why.first()
    if not why:
        return actions, ""
    kept = [a for a in actions if a not in public]
    return kept, f"A rule never answers an automatic message ({why})."


# --- the test endpoint ---------------------------------------------------------------------------------------


def _describe(changes: dict) -> dict:
    out = {}
    for key, value in changes.items():
        if key == "assignment":
            for side, obj in value.items():
                out[f"assignment.{side}ID"] = None if obj is None else str(obj.pk)
        elif key in ("tags", "followers"):
            out[f"{key[:-1]}IDs"] = sorted(str(obj.pk) for obj in value)
        elif key == "custom_fields":
            out["customFields"] = value
        else:
            out[key] = value
    return out


def dry_run(*, rule: Rule, ticket: Ticket) -> dict:
    """Whether `rule` would fire on `ticket` now (its event conditions taken as met: no write is happening) and
    what it would change. Reads only."""
    facts = Facts(ticket, [], now=timezone.now())
    results = [condition["type"] == "event" or holds(condition, facts) for condition in rule.triggers]
    met = any(results) if rule.quantifier == "any" else all(results)
    if not met:
        failed = [i for i, ok in enumerate(results) if not ok]
        return {"fires": False, "reason": f"Conditions not met: {failed}.", "changes": {}}
    if not rule.active:
        return {"fires": False, "reason": "The rule is not active.", "changes": {}}
    firing = RuleFiring.objects.filter(rule=rule, ticket=ticket).first()
    if firing is not None and firing.count >= rule.limit_per_ticket:
        return {"fires": False, "reason": "The rule reached its limit on this ticket.", "changes": {}}
    try:
        changes = ticket_actions.plan(ticket=ticket, actions=rule.actions)
    except DomainError as error:
        return {"fires": False, "reason": f"Skipped: {error.message}", "changes": {}}
    described = _describe(changes)
    for action in rule.actions:
        if action["type"] in ticket_actions.FOLLOW_UPS:
            described[action["type"]] = action["value"]
    return {"fires": True, "reason": "", "changes": described}

"""Writes of rules (owners manage them). Conditions are checked by tickets.rules.conditions, actions by
tickets.actions (the macros' vocabulary, without `reply`). At most 500 rules per license (409)."""

from __future__ import annotations

from accounts.models import License
from accounts.services import stamp_create, stamp_update
from helpdesk.errors import Conflict, Invalid
from helpdesk.transactions import unit_of_work
from tickets import actions as ticket_actions
from tickets.rules import conditions
from tickets.rules.models import Rule

MAX_RULES = 500
# The macros' actions a rule may run (`reply` is the macros' own: an agent's answer).
ACTION_TYPES = tuple(t for t in ticket_actions.TYPES if t != "reply")


def _actions(license: License, actions) -> list[dict]:
    return ticket_actions.validate(license=license, actions=actions, types=ACTION_TYPES)


def _limit(limit_per_ticket) -> None:
    if limit_per_ticket is not None and not 1 <= limit_per_ticket <= 1000:
        message = "Must be between 1 and 1000."
        raise Invalid(f"Invalid value for 'limitPerTicket': {message}", details={"limitPerTicket": [message]})


@unit_of_work
def rule_create(
    *,
    license: License,
    name: str,
    triggers,
    actions,
    description: str = "",
    active: bool = True,
    ordering: int = 0,
    quantifier: str = "all",
    type: str = "tickets",
    limit_per_ticket: int = 1,
) -> Rule:
    _limit(limit_per_ticket)
    triggers = conditions.validate(license=license, triggers=triggers)
    rule = Rule(
        license=license,
        name=name,
        description=description,
        active=active,
        ordering=ordering,
        quantifier=quantifier,
        type=type,
        triggers=triggers,
        actions=_actions(license, actions),
        limit_per_ticket=limit_per_ticket,
        is_time_rule=conditions.is_time_rule(triggers),
    )
    if Rule.objects.for_license(license).count() >= MAX_RULES:
        raise Conflict(f"The limit of {MAX_RULES} rules is reached.", code="limit_rules")
    stamp_create(rule)
    rule.save()
    return rule


@unit_of_work
def rule_update(*, rule: Rule, triggers=None, actions=None, limit_per_ticket=None, **fields) -> Rule:
    _limit(limit_per_ticket)
    if triggers is not None:
        rule.triggers = conditions.validate(license=rule.license, triggers=triggers)
        rule.is_time_rule = conditions.is_time_rule(rule.triggers)
    if actions is not None:
        rule.actions = _actions(rule.license, actions)
    if limit_per_ticket is not None:
        rule.limit_per_ticket = limit_per_ticket
    for name, value in fields.items():
        if name not in ("name", "description", "active", "ordering", "quantifier", "type"):
            raise TypeError(f"unknown rule field {name}")
        setattr(rule, name, value)
    stamp_update(rule)
    rule.save()
    return rule


@unit_of_work
def rule_delete(*, rule: Rule) -> None:
    rule.delete()

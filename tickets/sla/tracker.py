"""A ticket's SLA clocks moved by one write: pure functions over the clock state (a dict kept on the ticket as
`sla_clock`), no database.

Three metrics, each a clock in one of three states: running (`due`: the moment it breaches), held (`left`: the
business seconds it had when it stopped: paused, or a solved ticket's resolution) or stopped (neither: met, or
not started). Each remembers its `target` (minutes; null: not tracked) and whether it `breached`.

- `firstResponse` starts with the ticket (when the policy first applies to it, if no agent answered yet) and is
  met by the first public agent message; `nextResponse` starts (again) with every client message once the first
  response is met, and is met by the next public agent message; `resolution` starts with the ticket and is held
  while the ticket is solved or closed (a reopened ticket goes on with what was left); solving also meets the
  two response clocks.
- `pending` and `onhold` hold every running clock (what was left is kept) until the ticket is open again. A clock
  already past its due time is not held: the breach sweep records its breach within the minute.
- A change of priority or policy re-targets: a running or held clock keeps the business time already used and
  gets the new target's remainder (at least zero).

Times in the state are ISO strings (UTC); `due()` gives the nearest unbreached running due time, the one the
breach sweep and the search read (`sla_due_at`).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from helpdesk.timestamps import iso
from tickets.sla import clock

METRICS = ("firstResponse", "nextResponse", "resolution")
TARGET_KEYS = {
    "firstResponse": "firstResponseMinutes",
    "nextResponse": "nextResponseMinutes",
    "resolution": "resolutionMinutes",
}
DOCUMENT_KEYS = {
    "firstResponse": "firstResponseDueAt",
    "nextResponse": "nextResponseDueAt",
    "resolution": "resolutionDueAt",
}
ACTIVE, HELD, DONE = "active", "held", "done"
PHASES = {"open": ACTIVE, "pending": HELD, "onhold": HELD, "solved": DONE, "closed": DONE}


def _at(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _text(moment: datetime) -> str:
    return moment.isoformat()


def targets_for(policy_targets: dict, priority) -> dict:
    """The minutes of each metric for a priority (null when the policy sets none)."""
    row = (policy_targets or {}).get(str(priority)) or {}
    return {metric: row.get(key) for metric, key in TARGET_KEYS.items()}


@dataclasses.dataclass(frozen=True)
class Write:
    """What one write tells the clocks."""

    now: datetime
    status: str
    targets: dict  # metric -> minutes or None (targets_for)
    created: bool = False
    client_message: bool = False  # a client message other than a new ticket's first
    agent_response: bool = False  # a public agent message
    answered_before: bool = False  # an agent answered before the policy applied


def _start(metric: dict, phase: str, schedule, now) -> None:
    metric["breached"] = False
    seconds = metric["target"] * 60
    if phase == ACTIVE:
        metric["due"], metric["left"] = _text(clock.add(schedule, now, seconds)), None
    # held and done alike: the whole target left
    else:
        metric["due"], metric["left"] = None, seconds


def _stop(metric: dict) -> None:
    metric["due"] = metric["left"] = None


def _retarget(metric: dict, target, phase, schedule, now) -> None:
    old, metric["target"] = metric["target"], target
    if target is None:
        _stop(metric)
        return
    delta = (target - old) * 60
    if metric["due"] is not None:
        left = clock.between(schedule, now, _at(metric["due"])) + delta
        metric["due"] = _text(clock.add(schedule, now, max(left, 0)))
    elif metric["left"] is not None:
        metric["left"] = max(metric["left"] + delta, 0)


def _phase(metric: dict, name: str, phase: str, schedule, now) -> None:
    """Hold, resume or stop the clock as the ticket's status says."""
    if phase == ACTIVE and metric["left"] is not None:
        metric["due"], metric["left"] = _text(clock.add(schedule, now, metric["left"])), None
    elif phase != ACTIVE and metric["due"] is not None and (metric["breached"] or _at(metric["due"]) > now):
        # past due and not breached yet: left running for the sweep to record the breach
        metric["due"], metric["left"] = None, max(clock.between(schedule, now, _at(metric["due"])), 0)
    if phase == DONE and name != "resolution":
        _stop(metric)


def begin(policy_id: str, write: Write, schedule) -> dict:
    """The clocks of a ticket a policy starts to apply to."""
    state = {"policyID": policy_id, "metrics": {}}
    phase = PHASES[write.status]
    for name in METRICS:
        metric = {"target": write.targets[name], "due": None, "left": None, "breached": False}
        state["metrics"][name] = metric
        starts = name == "resolution" or (name == "firstResponse" and not write.answered_before)
        if metric["target"] is not None and starts and not (phase == DONE and name != "resolution"):
            _start(metric, phase, schedule, write.now)
    return state


def advance(state: dict, policy_id: str, write: Write, schedule) -> dict:
    """The clocks after a write (a new dict; `state` is left as it was)."""
    state = {"policyID": policy_id, "metrics": {name: dict(m) for name, m in state["metrics"].items()}}
    now, phase = write.now, PHASES[write.status]
    metrics = state["metrics"]
    for name in METRICS:
        metric = metrics[name]
        if metric["target"] != write.targets[name]:
            if metric["target"] is None:  # newly tracked: as if the policy just applied
                fresh = begin(policy_id, write, schedule)["metrics"][name]
                metric.update(fresh if name != "nextResponse" else {"target": write.targets[name]})
            else:
                _retarget(metric, write.targets[name], phase, schedule, now)
        _phase(metric, name, phase, schedule, now)
    first, next_ = metrics["firstResponse"], metrics["nextResponse"]
    answered = first["due"] is None and first["left"] is None
    if (
        write.client_message
        and not write.created
        and answered
        and next_["target"] is not None
        and phase != DONE
    ):
        _start(next_, phase, schedule, now)
    if write.agent_response:
        _stop(first)
        _stop(next_)
    return state


def due(state: dict | None) -> datetime | None:
    """The nearest due time of a running clock not breached yet (what the sweep waits for)."""
    if state is None:
        return None
    times = [_at(m["due"]) for m in state["metrics"].values() if m["due"] is not None and not m["breached"]]
    return min(times, default=None)


def breach(state: dict, now) -> list[tuple[str, datetime]]:
    """Mark the running clocks past due as breached (in `state`); their (metric, due time)."""
    found = []
    for name in METRICS:
        metric = state["metrics"][name]
        if metric["due"] is not None and not metric["breached"] and _at(metric["due"]) <= now:
            metric["breached"] = True
            found.append((name, _at(metric["due"])))
    return found


def document(state: dict | None, breaches: list) -> dict | None:
    """The ticket's `sla` as the API shows it: a held or stopped clock has no due time."""
    if state is None:
        return None
    out = {"policyID": state["policyID"]}
    for name in METRICS:
        moment = state["metrics"][name]["due"]
        out[DOCUMENT_KEYS[name]] = None if moment is None else iso(_at(moment))
    out["breaches"] = breaches
    return out

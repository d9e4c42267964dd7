"""The metrics' rules, once: how a ticket's events move its first response and its resolution cycles.

`Fact` is what a rule reads of one event; `fold(metrics, fact, ...)` applies it to a TicketMetrics (or the
migration's historical one) and returns the resolution it closes, if any. The write path
(tickets.reports.wiring) and the backfill (migration 0014) both call it, event by event, in history order.

- First response: the first public agent message after the client's first message, measured from that message.
- Resolution: from the ticket's creation, or from a reopening (a move from `solved`/`closed` to `open`,
  `pending` or `onhold`), to the first `solved` after it. A move to `closed` without `solved` closes no cycle;
  a reopening after it keeps the cycle's start.
"""

from __future__ import annotations

import dataclasses
import datetime

OPEN_STATUSES = ("open", "pending", "onhold")
DONE_STATUSES = ("solved", "closed")


@dataclasses.dataclass(frozen=True)
class Fact:
    type: str  # the event's type
    at: datetime.datetime
    author_type: str = ""
    agent_id: object = None  # the author agent's ID
    is_private: bool = False  # of a message event's message
    new_status: str = ""  # of a status event


@dataclasses.dataclass(frozen=True)
class Resolution:
    started_at: datetime.datetime
    solved_at: datetime.datetime
    agent_id: object
    team_id: object

    @property
    def seconds(self) -> float:
        return (self.solved_at - self.started_at).total_seconds()


def start(metrics, *, created_at, status: str, source: str) -> None:
    """A new ticket: its source and, unless it is created done, its first cycle."""
    metrics.source = source
    metrics.cycle_started_at = None if status in DONE_STATUSES else created_at


def fold(metrics, fact: Fact, *, agent_id=None, team_id=None) -> Resolution | None:
    """Apply one event; `agent_id`/`team_id`: the ticket's assignment at that moment. Returns a closed cycle."""
    if fact.type == "message":
        _message(metrics, fact, team_id)
        return None
    if fact.type != "status":
        return None
    if fact.new_status == "solved" and metrics.cycle_started_at is not None:
        solved = Resolution(metrics.cycle_started_at, fact.at, agent_id, team_id)
        metrics.cycle_started_at = None
        return solved
    if fact.new_status in OPEN_STATUSES and metrics.cycle_started_at is None:
        metrics.cycle_started_at = fact.at
    return None


def _message(metrics, fact: Fact, team_id) -> None:
    if fact.author_type == "client" and metrics.first_client_message_at is None:
        metrics.first_client_message_at = fact.at
    elif (
        fact.author_type == "agent"
        and not fact.is_private
        and metrics.first_response_at is None
        and metrics.first_client_message_at is not None
        and fact.at > metrics.first_client_message_at
    ):
        metrics.first_response_at = fact.at
        metrics.first_response_seconds = (fact.at - metrics.first_client_message_at).total_seconds()
        metrics.first_response_agent_id = fact.agent_id
        metrics.first_response_team_id = team_id

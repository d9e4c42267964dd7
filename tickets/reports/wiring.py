"""The metrics and the rollups kept in the write's transaction: a receiver of `events_recorded`
(tickets.signals), which every write of a ticket's history sends once its events are saved, under the ticket's
row lock.

Cost per write (bench/README.md): a new ticket inserts its metrics row and its rollups (2 statements); a write
whose events hold a message, a status, a silo, an assignment or a rating reads the row (1) and, only when what
it holds moves, updates it (1), inserts a resolution (1) and adds to the rollups (1 upsert); a silo move also
updates the copies on the resolutions (1) and, when the ticket enters or leaves the reports, reads them (1);
other writes (tags, teams, followers, priority...) cost nothing. Business seconds (a ticket under an SLA policy)
cost no statement: the policies are the unit of work's copy (tickets.sla.apply.business_seconds)."""

from __future__ import annotations

import uuid

from django.db import router

from helpdesk.compiled import Compiled, Insert, Update
from tickets.reports import cycles, rollups
from tickets.reports.models import TicketMetrics, TicketResolution
from tickets.sla import apply as sla

_RELEVANT = ("message", "status")
# What else moves a ticket's rollups (tickets.reports.rollups): its silo, its assignee (status and rating per
# agent and team; response and resolution per current assignee), its rating and its teams (every metric per set
# of visible teams).
_ROLLED = ("silo", "assignment", "rating", "teams")
_insert = Insert(TicketMetrics)  # a new ticket's metrics row: its INSERT built once per process
_COLUMNS = [field.attname for field in TicketMetrics._meta.concrete_fields]
# A first response's, a solve's, a move's UPDATE of the whole row (as `save()` sends it) built once per process:
# a first reply to a ticket that has its metrics row (as production's tickets have) 20.74 -> 20.06 M
# (bench/README.md "Issue 34: the agent reply, fourth round")
_UPDATED = [field.name for field in TicketMetrics._meta.concrete_fields if not field.primary_key]
_update = Update(TicketMetrics)
# A write's read of its ticket's metrics row, compiled once (`.first()`'s statement: ordered by the key, LIMIT 1):
# a reply 30.17 -> 28.01 M instructions (bench/README.md "Issue 34: writes, third round")
_metrics = Compiled(
    lambda ticket_id: (
        TicketMetrics.objects.filter(ticket_id=ticket_id).order_by("pk").values_list(*_COLUMNS)[:1]
    ),
    uuid.UUID,
)


def _read_metrics(ticket_id) -> TicketMetrics | None:
    rows = _metrics.rows(ticket_id)
    return TicketMetrics.from_db(router.db_for_read(TicketMetrics), _COLUMNS, rows[0]) if rows else None


def fact(event) -> cycles.Fact:
    message = event.message if event.type == "message" else None
    return cycles.Fact(
        type=event.type,
        at=event.created_at,
        author_type=event.author_type,
        agent_id=event.author_agent_id,
        is_private=bool(message is not None and message.is_private),
        new_status=(event.payload or {}).get("new", "") if event.type == "status" else "",
    )


def on_events_recorded(sender, *, ticket, events, created=False, **kwargs) -> None:
    before = None  # the ticket's contribution to the rollups before this write
    if created:
        metrics = TicketMetrics(
            ticket_id=ticket.pk, license_id=ticket.license_id, created_at=ticket.created_at
        )
        cycles.start(
            metrics, created_at=ticket.created_at, status=ticket.status, source=events[0].source_type
        )
    elif not any(event.type in _RELEVANT + _ROLLED for event in events):
        return
    else:
        metrics = _read_metrics(ticket.pk)
        if metrics is None:  # a ticket older than the metrics that the backfill missed: start it now
            metrics = TicketMetrics(
                ticket_id=ticket.pk,
                license_id=ticket.license_id,
                source="system",
                created_at=ticket.created_at,
            )
            created = True
        else:
            before = rollups.state_of_metrics(metrics, ticket.created_at)
    was_reported = before is not None and before["silo"] in rollups.REPORTED_SILOS
    moved = metrics.silo != ticket.silo
    copies = _copies(metrics)
    rollups.copy_ticket(metrics, ticket)
    metrics.teams = _teams(metrics, ticket, events, fresh=before is None)
    state = _state(metrics)
    solved = []
    answered = metrics.first_response_at is not None
    if any(event.type in _RELEVANT for event in events):
        for event in events:
            closed = cycles.fold(
                metrics, fact(event), agent_id=ticket.assignment_agent_id, team_id=ticket.assignment_team_id
            )
            if closed is not None:
                solved.append(closed)
    metrics.resolved += len(solved)
    if not answered and metrics.first_response_at is not None:
        metrics.first_response_business_seconds = sla.business_seconds(
            ticket, metrics.first_client_message_at, metrics.first_response_at
        )
    if created:
        _insert.save([metrics], lambda objs: objs[0].save(force_insert=True))
    elif _state(metrics) != state or _copies(metrics) != copies or solved:
        _update.save(metrics, _UPDATED, lambda: metrics.save(update_fields=_UPDATED))
    delta = rollups.contribution(before, -1)
    rollups.contribution(rollups.state_of_metrics(metrics, ticket.created_at), 1, delta)
    reported = ticket.silo in rollups.REPORTED_SILOS
    # not an audited model: one UPDATE of the ticket's few resolutions; read only when they enter or leave, or
    # their ticket's assignee or teams (their "c" and "v" rows) change
    updated = (
        moved
        and not created
        and TicketResolution.objects.filter(ticket_id=ticket.pk).update(silo=ticket.silo)
    )
    now_after = (metrics.assignee_id, rollups.team_set(metrics.teams))
    now_before = None if before is None else (before["agent"], before["teams"])
    if (updated and reported != was_reported) or (
        metrics.resolved > len(solved) and reported and was_reported and now_before != now_after
    ):
        earlier = list(TicketResolution.objects.filter(ticket_id=ticket.pk))
        if was_reported:
            rollups.resolution_contribution(earlier, -1, delta, now=now_before)
        if reported:
            rollups.resolution_contribution(earlier, 1, delta, now=now_after)
    if solved:
        rows = TicketResolution.objects.bulk_create(
            TicketResolution(
                ticket_id=ticket.pk,
                license_id=ticket.license_id,
                started_at=each.started_at,
                solved_at=each.solved_at,
                seconds=each.seconds,
                business_seconds=sla.business_seconds(ticket, each.started_at, each.solved_at),
                silo=ticket.silo,
                agent_id=each.agent_id,
                team_id=each.team_id,
            )
            for each in solved
        )
        if reported:
            rollups.resolution_contribution(rows, 1, delta, now=now_after)
    rollups.add(ticket.license_id, delta)


def _teams(metrics, ticket, events, *, fresh: bool) -> str:
    """The ticket's team links after this write: a new metrics row reads them (a new ticket's are prefetched,
    tickets.services._link_new_ticket: no statement), else the copy moves by the `teams` events."""
    if fresh:
        teams = {str(team.pk) for team in ticket.teams.all()}
    else:
        teams = set(rollups.team_set(metrics.teams))
        for event in events:
            if event.type == "teams":
                teams = (teams - set(event.payload["removed"])) | set(event.payload["added"])
    return ",".join(sorted(teams))


def _state(metrics) -> tuple:
    return (metrics.first_client_message_at, metrics.first_response_at, metrics.cycle_started_at)


def _copies(metrics) -> tuple:
    return (metrics.silo, metrics.status, metrics.assignee_id, metrics.assigned_team_id, metrics.rated_at,
            metrics.rating, metrics.teams)  # fmt: skip

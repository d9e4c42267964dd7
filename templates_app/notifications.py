"""E-mail notifications of agents: a ticket assigned to them (the team's `notifyTeamAboutAssignedTicket`) and
a requester's message (`notifyTeamAboutRequestersActivity`), through the outbox and the license's template
like every other e-mail of the product.

Who: the assigned agent, else (only a team assigned) the team's agents; never an agent who is not active or
whose `settings.emailNotificationsActive` is false, never the agent who made the assignment themselves.

Batching: the receivers (in the write's transaction) only write an `AgentNotification` row per agent and, after
commit, enqueue the agent's digest task, delayed until the agent's batching window is over. The digest
(`digest_send`, under the agent's row lock) sends one e-mail with every row pending, then marks them sent; it
sends nothing while the agent's last digest is younger than NOTIFICATION_BATCH_SECONDS. So a burst of 50
replies is one e-mail at once and one digest of the other 49 a window later. A lost enqueue is picked up by
the beat sweeper (`send_due`).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from accounts.models import STATUS_ACTIVE, Agent
from helpdesk.queue import task_named
from helpdesk.transactions import unit_of_work
from templates_app import mail
from templates_app.models import AgentNotification, OutboundMessage

log = logging.getLogger(__name__)

KIND_MAIL = "notification"
KEEP_SENT = timedelta(days=1)


def window() -> timedelta:
    return timedelta(seconds=max(int(settings.NOTIFICATION_BATCH_SECONDS), 0))


def wants_mail(agent: Agent) -> bool:
    return (
        agent.status == STATUS_ACTIVE
        and (agent.settings or {}).get("emailNotificationsActive", True) is not False
    )


def _team_agents(team) -> list[Agent]:
    return list(team.agents.filter(status=STATUS_ACTIVE).order_by("created_at")) if team is not None else []


def _last_sent(agent_id):
    return AgentNotification.objects.filter(agent_id=agent_id, sent_at__isnull=False).aggregate(
        last=Max("sent_at")
    )["last"]


def _delay(agent_id) -> float:
    """Seconds until the agent may get their next e-mail."""
    last = _last_sent(agent_id)
    if last is None:
        return 0.0
    return max((last + window() - timezone.now()).total_seconds(), 0.0)


def notify(*, ticket, agents, kind: str, exclude=None) -> list[AgentNotification]:
    """Note `kind` about `ticket` for each agent who wants mail; their digests go after commit."""
    rows = []
    for agent in {a.pk: a for a in agents}.values():
        if exclude is not None and agent.pk == exclude.pk or not wants_mail(agent):
            continue
        rows.append(AgentNotification(license_id=ticket.license_id, agent=agent, ticket=ticket, kind=kind))
    AgentNotification.objects.bulk_create(rows)
    for row in rows:
        delay = _delay(row.agent_id)
        transaction.on_commit(
            lambda agent_id=row.agent_id, delay=delay: enqueue(agent_id=agent_id, delay=delay)
        )
    return rows


def enqueue(*, agent_id, delay: float = 0) -> None:
    # Named, not imported: tasks.py calls this module.
    send_agent_notifications = task_named("templates_app.tasks.send_agent_notifications")
    try:
        send_agent_notifications.apply_async(args=[str(agent_id)], countdown=int(delay + 0.999))
    except Exception:
        log.exception("Could not enqueue the notifications of agent %s; send_due will pick them up", agent_id)


# --- the receivers (inside the ticket write's transaction) --------------------------------------------------


def on_ticket_assigned(sender, *, ticket, team=None, agent=None, by_agent=None, **kwargs) -> None:
    """Receiver of tickets.signals.ticket_assigned."""
    from templates_app.ticket_mail import ticket_team

    if ticket.silo != "tickets" or (team is None and agent is None):
        return
    team = team or ticket_team(ticket)
    if team is None or not (team.settings or {}).get("notifyTeamAboutAssignedTicket", True):
        return
    agents = [agent] if agent is not None else _team_agents(team)
    notify(ticket=ticket, agents=agents, kind=AgentNotification.KIND_ASSIGNED, exclude=by_agent)


def on_agents_notified(sender, *, ticket, agents=None, by_agent=None, **kwargs) -> None:
    """Receiver of tickets.signals.agents_notified (a rule's or a macro's `notifyAgents`): `agents`, or (None)
    the agents of the team that answers the ticket; whatever the team's notify settings, which are about
    assignments and requesters' messages (the rule is the owner's explicit ask), never an agent who turned
    e-mail notifications off."""
    from templates_app.ticket_mail import ticket_team

    if ticket.silo != "tickets":
        return
    if agents is None:
        agents = _team_agents(ticket_team(ticket))
    notify(ticket=ticket, agents=agents, kind=AgentNotification.KIND_RULE, exclude=by_agent)


def on_message_created(sender, *, message, ticket, created_ticket: bool = False, **kwargs) -> None:
    """Receiver of tickets.signals.message_created: a requester's message tells the assignee (else the team)."""
    from templates_app.ticket_mail import ticket_team

    if message.author_type != "client" or message.is_private or ticket.silo != "tickets":
        return
    team = ticket_team(ticket)
    if team is None or not (team.settings or {}).get("notifyTeamAboutRequestersActivity", False):
        return
    agents = [ticket.assignment_agent] if ticket.assignment_agent_id else _team_agents(team)
    notify(ticket=ticket, agents=agents, kind=AgentNotification.KIND_ACTIVITY)


def on_tickets_purging(sender, *, license_id: int, ticket_ids: list, **kwargs) -> None:
    rows = AgentNotification.objects.filter(license_id=license_id, ticket_id__in=ticket_ids)
    rows._raw_delete(rows.db)


# --- the digest ---------------------------------------------------------------------------------------------


def _line(ticket, kinds: list[str]) -> str:
    what = []
    if AgentNotification.KIND_ASSIGNED in kinds:
        what.append("assigned to you")
    replies = kinds.count(AgentNotification.KIND_ACTIVITY)
    if replies:
        who = ticket.requester_name or ticket.requester_email
        what.append(f"{replies} new message{'s' if replies > 1 else ''} from {who}")
    if AgentNotification.KIND_RULE in kinds:
        what.append("a rule asks for your attention")
    link = f"{settings.HELPDESK_APP_URL.rstrip('/')}/admin/tickets/ticket/{ticket.pk}/change/"
    return f"#{ticket.short_id} {ticket.subject}: {', '.join(what)}\n{link}"


def _subject(by_ticket: dict) -> str:
    if len(by_ticket) == 1:
        ticket, kinds = next(iter(by_ticket.values()))
        if set(kinds) == {AgentNotification.KIND_ASSIGNED}:
            return f"[#{ticket.short_id}] Assigned to you: {ticket.subject}"
        if set(kinds) == {AgentNotification.KIND_RULE}:
            return f"[#{ticket.short_id}] For your attention: {ticket.subject}"
        return f"[#{ticket.short_id}] New activity: {ticket.subject}"
    return f"Updates on {len(by_ticket)} tickets"


@unit_of_work
def digest_send(*, agent_id) -> OutboundMessage | None:
    """One e-mail to the agent with every pending notification, unless their window is not over yet."""
    agent = (
        Agent.objects.select_for_update(no_key=True, of=("self",))
        .select_related("license")
        .filter(pk=agent_id)
        .first()
    )
    if agent is None:
        return None
    pending = AgentNotification.objects.filter(agent=agent, sent_at__isnull=True)
    if not pending.exists():
        return None
    now = timezone.now()
    last = _last_sent(agent.pk)
    if last is not None and now < last + window():
        return None  # a task enqueued for the end of the window sends these
    rows = list(pending.select_related("ticket").order_by("created_at", "id"))
    AgentNotification.objects.filter(pk__in=[row.pk for row in rows]).update(sent_at=now)
    live = [row for row in rows if row.ticket.silo == "tickets"]
    if not wants_mail(agent) or not live:
        return None  # turned off (or the tickets went to spam or trash) since: dropped, not sent later
    by_ticket: OrderedDict = OrderedDict()
    for row in live:
        by_ticket.setdefault(row.ticket_id, (row.ticket, []))[1].append(row.kind)
    body = "\n\n".join(_line(ticket, kinds) for ticket, kinds in by_ticket.values())
    return mail.license_mail_queue(
        license=agent.license,
        kind=KIND_MAIL,
        key=f"{KIND_MAIL}:{agent.pk}:{rows[0].pk}",
        to=agent.email,
        subject=_subject(by_ticket),
        body=body,
        agent=agent,
    )


def send_due() -> int:
    """Beat's sweeper: digests of agents with notifications older than a window (their enqueue was lost, or
    the broker was down); deletes sent rows after a day."""
    now = timezone.now()
    due = (
        AgentNotification.objects.filter(sent_at__isnull=True, created_at__lte=now - window())
        .values_list("agent_id", flat=True)
        .distinct()
    )
    sent = 0
    for agent_id in list(due):
        sent += digest_send(agent_id=agent_id) is not None
    AgentNotification.objects.filter(sent_at__lt=now - KEEP_SENT).delete()
    return sent

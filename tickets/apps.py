from django.apps import AppConfig
from django.db.models import Q


class TicketsConfig(AppConfig):
    name = "tickets"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Tickets react to the changes of the apps below them (accounts, audit) through their signals.
        from accounts.signals import agent_leaving
        from audit.capture import changes_recorded
        from tickets.autoassign import on_agent_leaving
        from tickets.signals import events_recorded
        from tickets.webhooks import outbox

        events_recorded.connect(outbox.on_events_recorded, dispatch_uid="tickets.webhooks.events")
        changes_recorded.connect(outbox.on_changes_recorded, dispatch_uid="tickets.webhooks.changes")
        agent_leaving.connect(on_agent_leaving, dispatch_uid="tickets.autoassign.agent_leaving")
        _connect_totals()


def lock_reached_tickets(instance) -> None:
    """Before a team's, an agent's or a tag's deletion cascades into tickets (their links deleted, their
    assignment set to NULL), lock those tickets in ID order, as every ticket write locks its tickets first: the
    cascade then waits for a write in progress instead of deadlocking with it (it would take the links' locks
    first, the write the ticket's)."""
    from accounts.models import Agent, Team
    from tickets.models import Ticket

    through = {Team: Ticket.teams.through, Agent: Ticket.followers.through}.get(
        type(instance), Ticket.tags.through
    )
    column = {Team: "team", Agent: "agent"}.get(type(instance), "tag")
    reached = Q(pk__in=through.objects.filter(**{column: instance}).values("ticket_id"))
    if type(instance) in (Team, Agent):
        reached |= Q(**{f"assignment_{column}": instance})
    list(
        Ticket.objects.filter(reached, license_id=instance.license_id)
        .select_for_update(no_key=True)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def _connect_totals():
    """Every change of tickets, and every deletion whose cascade changes tickets, reaches tickets.counts."""
    from django.db.models.signals import m2m_changed, post_save, pre_delete

    from accounts.models import Agent, Team
    from tickets import counts
    from tickets.models import Tag, Ticket

    def ticket_saved(sender, instance, **kwargs):
        counts.touched(instance.license_id, instance.pk)

    def links_changed(sender, instance, action, reverse, **kwargs):
        if action.startswith("post_"):
            counts.touched(instance.license_id, None if reverse else instance.pk)

    def cascade_coming(sender, instance, **kwargs):
        counts.touched(instance.license_id)
        lock_reached_tickets(instance)

    post_save.connect(ticket_saved, sender=Ticket, weak=False, dispatch_uid="tickets.counts.ticket")
    for through in (Ticket.teams.through, Ticket.tags.through, Ticket.followers.through):
        m2m_changed.connect(
            links_changed, sender=through, weak=False, dispatch_uid=f"tickets.counts.{through}"
        )
    for model in (Agent, Team, Tag):
        pre_delete.connect(cascade_coming, sender=model, weak=False, dispatch_uid=f"tickets.counts.{model}")

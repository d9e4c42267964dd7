"""What tickets.apps connects at ready(): the totals' view of every change of tickets, and their generation
loaded with the API caller's license."""

from __future__ import annotations

from django.db.models.signals import m2m_changed, post_save, pre_delete

from accounts.api.authentication import load_with_license
from accounts.models import Agent, Team
from tickets.models import Tag, Ticket
from tickets.totals.writing import touched


def connect() -> None:
    # Every search reads its license's generation (reading.exact_count): joined into the caller's query when the
    # request reads its caller from the database, it costs no statement of its own (bench/README.md, "Totals
    # after a write"); a caller served from its process's copy comes without it (one indexed read then).
    load_with_license("search_generation")
    # Every change of tickets, and every deletion whose cascade changes tickets (connected before tickets.apps'
    # lock of the tickets such a cascade reaches).
    post_save.connect(_ticket_saved, sender=Ticket, weak=False, dispatch_uid="tickets.totals.ticket")
    for through in (Ticket.teams.through, Ticket.tags.through, Ticket.followers.through):
        m2m_changed.connect(
            _links_changed, sender=through, weak=False, dispatch_uid=f"tickets.totals.{through}"
        )
    for model in (Agent, Team, Tag):
        pre_delete.connect(_cascade_coming, sender=model, weak=False, dispatch_uid=f"tickets.totals.{model}")


def _ticket_saved(sender, instance, **kwargs):
    touched(instance.license_id, instance.pk)


def _links_changed(sender, instance, action, reverse, **kwargs):
    if action.startswith("post_"):
        touched(instance.license_id, None if reverse else instance.pk)


def _cascade_coming(sender, instance, **kwargs):
    touched(instance.license_id)

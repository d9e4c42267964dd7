"""Writes of tickets, messages, tags and attachment transactions. The API and the admin call only these.

Invariants kept here: short IDs are allocated per license under a row lock; related objects belong to the
ticket's license; tickets in read-only silos change only by moving back; `updatedAt`, `statusChangedAt` and
the message times follow every change; the language, the search text (and on PostgreSQL the tsvector) are
refreshed in the same transaction; every write to tickets runs in a unit of work (helpdesk.transactions; the
services declare the tickets they change, once locked), which keeps the search totals; every
change a client can see in the ticket's history (messages, status, priority, assignment, silo, teams, tags, followers,
merge, rating) writes its event in the same transaction (tickets.events).
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import datetime

from django.conf import settings
from django.db import connection, router
from django.db.models import Sum
from django.db.models.query import MAX_GET_RESULTS
from django.utils import timezone

from accounts.models import Agent, Attachment, AttachmentTransaction, License, Team
from accounts.services import same_license, stamp_create, stamp_update, transaction_bind
from helpdesk.compiled import Compiled, Insert, Update
from helpdesk.context import current_actor
from helpdesk.errors import Conflict, TooLarge, field_error
from helpdesk.timestamps import iso
from helpdesk.transactions import on_rollback, unit_of_work
from helpdesk.versioned import read_together
from tickets import autoassign, collisions, search, sender_lists, totals
from tickets.custom_fields import values as custom_field_values
from tickets.events import History, acting_agent, acting_author, assignment_side
from tickets.models import RATINGS, READ_ONLY_SILOS, Message, Tag, Ticket, TicketTeam
from tickets.signals import message_created, rating_requested, ticket_assigned

# pg_advisory_xact_lock's first key: the space of the per-license upload locks (the second key is the license).
_UPLOAD_LOCK_SPACE = 0x41545431

# --- helpers ------------------------------------------------------------------------------------------


def _next_number(license: License) -> int:
    """The license's next ticket number, in one statement (an upsert: inside a transaction it holds the row's
    lock until the commit, so that the license's new tickets are written one after the other)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO tickets_ticketsequence (license_id, last_number) VALUES (%s, 1) "
            "ON CONFLICT (license_id) DO UPDATE SET last_number = tickets_ticketsequence.last_number + 1 "
            "RETURNING last_number",
            [license.pk],
        )
        return cursor.fetchone()[0]


def ticket_number_reserve(license: License) -> int | None:
    """The license's next ticket number taken in a statement of its own, before the write that will use it opens
    its transaction (`ticket_create(number=...)`); None when that cannot be (already inside a transaction), or
    gains nothing (SQLite, whose writes wait for each other anyway: it would only add a commit).

    Taken inside the write, the number's row lock is held to the write's commit: every new ticket of a license
    waits for the one before it to commit, its whole transaction (~13 statements by mail). Taken so, the row is
    locked for the one statement. The price: a number is never given back, so a write that fails after taking
    one leaves a gap in the license's numbers, as a PostgreSQL sequence does; and numbers are no longer
    committed in their order. Mail in takes one for a mail that will open a ticket (issue 34: all of a license's
    mail waited on this row; bench/README.md "Issue 34: sixth round")."""
    if connection.in_atomic_block or connection.vendor != "postgresql":
        return None
    return _next_number(license)


def _bind_transaction(license: License, transaction_id, ticket: Ticket) -> AttachmentTransaction | None:
    if transaction_id is None:
        return None
    return transaction_bind(
        license=license, transaction_id=transaction_id, bound_type="ticket", bound_id=ticket.pk
    )


def _note_language(license: License, language: str) -> None:
    if language == search.NO_LANGUAGE or language in (license.detected_languages or []):
        return
    locked = (
        License.objects.select_for_update(no_key=True).only("id", "detected_languages").get(pk=license.pk)
    )
    if language not in locked.detected_languages:
        locked.detected_languages = sorted([*locked.detected_languages, language])
        locked.save(update_fields=["detected_languages"])
    license.detected_languages = locked.detected_languages


def _text_fields(ticket: Ticket, texts: list[str]) -> dict:
    """Language, search text and (PostgreSQL) tsvector from the subject and the message texts, oldest first."""
    ticket.language = search.detect_language("\n".join([ticket.subject, *texts]))
    ticket.search_text = search.build_search_text(ticket, texts)
    fields = {"language": ticket.language, "search_text": ticket.search_text}
    vector = search.vector(ticket.language, ticket.search_text)
    if vector is not None:
        fields["search_vector"] = vector
    return fields


# Compiled once (helpdesk.compiled): every reply and change of the subject reads the texts (issue 34).
_message_texts = Compiled(
    lambda ticket_id: Message.objects.filter(ticket_id=ticket_id).order_by("created_at").values_list("text"),
    uuid.UUID,
)


def _refresh_text(ticket: Ticket) -> list[str]:
    """Language, search text and tsvector from the ticket's current subject and messages, set on `ticket` for
    the update's one save (issue 34: a reply's second UPDATE of the ticket's row gone, part of 50.2 -> 47.3 M
    instructions, bench/README.md "Issue 34: writes"); returns their names."""
    texts = [text for (text,) in _message_texts.rows(ticket.pk)]
    fields = _text_fields(ticket, texts)
    for name, value in fields.items():
        setattr(ticket, name, value)
    return list(fields)


# No save receivers: a message's INSERT built once per process (with the outbox row's: create 22.66 -> 21.98 M
# instructions, reply 30.88 -> 30.17 M; bench/README.md)
_message_insert = Insert(Message)


def _add_message(
    ticket: Ticket, *, data: dict, author_type: str, author_agent, txn, history: History
) -> Message:
    """Save a message (`data` is the API's message: text, isPrivate, richTextHtml) and its event."""
    now = history.now
    is_private = data.get("isPrivate", False)
    if author_type == "agent" and author_agent is None:
        author_agent = acting_agent(ticket.license_id)  # the admin's own agent, when they are one
    message = Message(
        license_id=ticket.license_id,
        ticket=ticket,
        text=data["text"],
        is_private=is_private,
        rich_text_html=data.get("richTextHtml") or "",
        no_auto_reply=(data.get("noAutoReply") or "")[:200],  # the inbound service's, never an API client's
        author_type=author_type,
        author_agent=author_agent if author_type == "agent" else None,
        transaction=txn,
        created_at=now,
    )
    _message_insert.save([message], lambda objs: objs[0].save())
    history.message(message)
    _message_times(ticket, is_private=is_private, author_type=author_type, now=now)
    return message


def _message_times(ticket: Ticket, *, is_private: bool, author_type: str, now) -> None:
    if not is_private:
        ticket.last_message_at = now
        if author_type == "agent":
            ticket.last_agent_message_at = now
        elif author_type == "client":
            ticket.last_client_message_at = now


def _apply_assignment(ticket: Ticket, assignment: dict) -> None:
    if "team" in assignment:
        ticket.assignment_team = assignment["team"]
    if "agent" in assignment:
        ticket.assignment_agent = assignment["agent"]


def _relation_ids(ticket: Ticket, names) -> dict[str, set]:
    return {name: set(getattr(ticket, name).values_list("pk", flat=True)) for name in names}


def _set_relations(ticket: Ticket, *, teams=None, tags=None, followers=None) -> None:
    license = ticket.license
    if teams is not None:
        same_license(license, teams, "teamIDs")
        ticket.teams.set(teams, through_defaults=_link_copies(ticket))
    if tags is not None:
        same_license(license, tags, "tagIDs")
        ticket.tags.set(tags)
    if followers is not None:
        same_license(license, followers, "followers")
        ticket.followers.set(followers)


# a new ticket's team links: their INSERT built once per process (create 20.01 -> 19.65 M instructions,
# bench/README.md "create and mail in, fourth round")
_team_link_insert = Insert(TicketTeam)


def _link_new_ticket(ticket: Ticket, teams) -> None:
    """A new ticket's team links in one INSERT (it has none to compare with). The teams are kept as the ticket's
    prefetched `teams` (Django drops that cache when the relation is changed through the ticket), so the
    autoassignment and the mail receivers that follow read them without a query."""
    teams = list(dict.fromkeys(teams))
    same_license(ticket.license, teams, "teamIDs")
    _team_link_insert.save(
        [TicketTeam(ticket=ticket, team=team, **_link_copies(ticket)) for team in teams],
        TicketTeam.objects.bulk_create,
    )
    prefetched = ticket.teams.all()
    prefetched._result_cache, prefetched._prefetch_done = teams, True
    ticket._prefetched_objects_cache = {
        **getattr(ticket, "_prefetched_objects_cache", {}),
        "teams": prefetched,
    }


def _link_copies(ticket: Ticket) -> dict:
    return {"license_id": ticket.license_id, "silo": ticket.silo, "status": ticket.status}


def sync_team_links(ticket: Ticket) -> None:
    """Copy the ticket's silo and status onto its team links (TicketTeam); call after every change of either."""
    TicketTeam.objects.filter(ticket=ticket).update(**_link_copies(ticket))


def _unique_people(people) -> list[dict]:
    seen, unique = set(), []
    for person in people or []:
        email = person["email"].strip().lower()
        if email not in seen:
            seen.add(email)
            unique.append({"email": email, "name": person.get("name", "")})
    return unique


# --- tickets --------------------------------------------------------------------------------------------


@unit_of_work
def ticket_create(
    *,
    license: License,
    subject: str,
    requester: dict,
    message: dict,
    author_type: str = "agent",
    author_agent: Agent | None = None,
    status: str = "open",
    priority: int = 0,
    teams=None,
    assignment: dict | None = None,
    tags=None,
    followers=None,
    custom_fields: dict | None = None,
    people_in_the_loop=None,
    transaction_id=None,
    sender_checked: bool = False,
    number: int | None = None,
) -> Ticket:
    """A new ticket with its first message. No teams → the license's default team.

    A client's ticket from a blocked sender starts in `spam` (tickets.sender_lists), unless the caller checked
    the sender itself (`sender_checked`: mail in, whose rules also weigh From against Reply-To). `number`: one
    the caller took with `ticket_number_reserve` before opening its transaction; else one is taken here."""
    assignment = assignment or {}
    same_license(license, [assignment.get("team"), assignment.get("agent")], "assignment")
    teams = _new_ticket_teams(license, teams, assignment.get("team"))
    custom_fields = _check_custom_fields(
        license, custom_fields, before={}, teams=teams, author_agent=author_agent
    )
    number = number or _next_number(license)
    ticket = Ticket(
        license=license,
        number=number,
        short_id=str(number),
        subject=subject,
        requester_email=requester["email"],
        requester_name=requester.get("name", ""),
        status=status,
        priority=priority,
        custom_fields=custom_fields,
        people_in_the_loop=_unique_people(people_in_the_loop),
    )
    check_sender = author_type == "client" and not sender_checked
    if check_sender and sender_lists.is_blocked(license, ticket.requester_email):
        ticket.silo = "spam"  # as the same sender's mail goes (tickets.sender_lists)
    totals.changing(license.pk, [ticket.pk], new=True)
    _apply_assignment(ticket, assignment)
    stamp_create(ticket)
    ticket.status_changed_at = ticket.last_message_at = ticket.created_at
    # the row is inserted complete, in one statement: the first message's times, the search columns
    _message_times(
        ticket, is_private=message.get("isPrivate", False), author_type=author_type, now=ticket.created_at
    )
    for name, value in _text_fields(ticket, [message["text"]]).items():
        setattr(ticket, name, value)
    ticket.save()
    ticket.__dict__.pop("search_vector", None)  # the SQL expression: read from the row if ever needed
    _note_language(license, ticket.language)
    txn = _bind_transaction(license, transaction_id, ticket)
    history = History(ticket, now=ticket.created_at, created=True)
    added = _add_message(
        ticket, data=message, author_type=author_type, author_agent=author_agent, txn=txn, history=history
    )
    _link_new_ticket(ticket, teams)
    _set_relations(ticket, tags=tags, followers=followers)
    # Before the message's receivers run, so that the mail out and the notifications see the assignee.
    automatic = autoassign.autoassign(ticket, history=history) if ticket.assignment_agent_id is None else None
    if automatic is None and (ticket.assignment_team_id or ticket.assignment_agent_id):
        ticket_assigned.send(
            sender=Ticket,
            ticket=ticket,
            team=ticket.assignment_team,
            agent=ticket.assignment_agent,
            by_agent=author_agent or acting_agent(license.pk),
        )
    history.save()
    ticket.last_added_message = added
    message_created.send(sender=Message, message=added, ticket=ticket, created_ticket=True)
    return ticket


def _default_team(license: License) -> Team:
    """The license's default team as an instance that holds only its ID and license: what a new ticket's writes
    read of it (its link, the autoassignment's lock); any other field is read from its row when first asked
    (Django's deferred fields), as the foreign key would have read it. Issue 34: a statement less per new ticket
    without teams (API and mail in), when nothing reads more (bench/README.md "Issue 34: writes, continued")."""
    if "default_team" in license._state.fields_cache:
        return license.default_team
    known = {"id": license.default_team_id, "license_id": license.pk}
    names = [f.attname for f in Team._meta.concrete_fields if f.attname in known]  # from_db's order
    return Team.from_db(None, names, [known[name] for name in names])


def _new_ticket_teams(license: License, teams, assigned_team) -> list:
    """A new ticket's teams: those given, else the license's default team; and always the assigned team."""
    if not teams:
        teams = [_default_team(license)] if license.default_team_id else []
    if assigned_team is not None and assigned_team not in teams:
        teams = [*teams, assigned_team]
    return teams


def _check_custom_fields(
    license: License, values, *, before: dict, teams, author_agent, automation: bool = False
) -> dict:
    """Step: the ticket's new `customFields` checked against the license's definitions (a 400 naming
    `customFields.<apiKey>`), deactivated fields' values kept (tickets.custom_fields.values)."""
    team_ids = {team.pk for team in teams}
    return custom_field_values.checked_values(
        license, values, before=before, team_ids=team_ids, author_agent=author_agent, automation=automation
    )


_UPDATABLE = ("status", "priority", "subject", "custom_fields", "silo")
# Never the search columns: those are added by _refresh_text() when the subject or the messages changed.
_SAVED_ON_UPDATE = [
    *_UPDATABLE, "assignment_team", "assignment_agent", "status_changed_at", "last_message_at",
    "last_agent_message_at", "last_client_message_at", "updated_at", "updated_by", "rating_requeest_sent",
]  # fmt: skip


def _newly_assigned(old: dict, new: dict) -> bool:
    """A new agent, or (no agent) a new team: someone to tell. Unassigning tells nobody."""
    if new["agent"] is not None:
        return old["agent"] is None or old["agent"]["ID"] != new["agent"]["ID"]
    return new["team"] is not None and (old["team"] is None or old["team"]["ID"] != new["team"]["ID"])


def _check_tag_reminder(ticket: Ticket, *, teams, tags, assignment) -> None:
    """Solving an untagged ticket of a team with `tagReminder` on is refused (409 `tag_required`)."""
    has_tags = bool(tags) if tags is not None else ticket.tags.exists()
    if has_tags:
        return
    team_ids = {t.pk for t in teams} if teams is not None else set(ticket.teams.values_list("pk", flat=True))
    new_team = (assignment or {}).get("team")
    team_ids |= {pk for pk in (ticket.assignment_team_id, getattr(new_team, "pk", None)) if pk}
    reminding = Team.objects.filter(pk__in=team_ids, settings__tagReminder=True).order_by("name").first()
    if reminding is not None:
        raise Conflict(
            f"Team '{reminding.name}' asks for a tag before a ticket is solved; add a tag, or send "
            '"force": true to solve it without one.',
            code="tag_required",
        )


# The versions of the license's copies this write reads (SLA policies, webhooks, rules, the mail's own addresses)
# in one round trip, as mail in reads them: reply 23.49 -> 23.04 M (a PATCH of the priority reads none: 9.63 ->
# 9.56 M; bench/README.md "Issue 34: the agent reply, fourth round").
@read_together()
@unit_of_work
def ticket_update(
    *,
    ticket: Ticket,
    author_agent: Agent | None = None,
    teams=None,
    assignment: dict | None = None,
    tags=None,
    followers=None,
    message: dict | None = None,
    author_type: str = "agent",
    transaction_id=None,
    force: bool = False,
    expected_versions: frozenset[int] | None = None,
    automation: bool = False,
    **fields,
) -> Ticket:
    """PATCH: fields, relations, silo moves and an optional reply. Read-only silos allow only `silo`.

    `force`: solve even when a team's `tagReminder` asks for a tag first. `expected_versions`: the versions
    the writer read (If-Match, tickets.collisions); another one → 409 `ticket_changed`. `automation`: a rule's
    or a macro's write, which may set `readOnly` custom fields."""
    _check_updatable(fields)
    ticket = _lock_ticket(ticket)
    collisions.check(ticket, expected_versions)
    totals.changing(ticket.license_id, [ticket.pk])
    relations = {"teams": teams, "tags": tags, "followers": followers}
    _check_writable(ticket, fields, [*relations.values(), assignment, message, transaction_id])
    if "custom_fields" in fields:
        fields["custom_fields"] = _check_custom_fields(
            ticket.license,
            fields["custom_fields"],
            before=ticket.custom_fields,
            teams=_teams_after(ticket, teams, assignment),
            author_agent=author_agent,
            automation=automation,
        )
    solving = fields.get("status") == "solved" and ticket.status != "solved"
    if solving and not force:
        _check_tag_reminder(ticket, teams=teams, tags=tags, assignment=assignment)
    history = History(ticket)
    before = {name: getattr(ticket, name) for name in ("status", "priority", "silo")}
    request_rating = _apply_fields(ticket, fields, now=history.now, solving=solving)
    if assignment is not None:
        before["assignment"] = _reassign(ticket, assignment)
    added = _add_reply(
        ticket, message, transaction_id, author_type=author_type, author_agent=author_agent, history=history
    )
    text_fields = _refresh_text(ticket) if message is not None or "subject" in fields else []
    _save_update(
        ticket, moved=(ticket.silo, ticket.status) != (before["silo"], before["status"]), also=text_fields
    )
    relations["teams"] = _teams_kept_visible(ticket, teams)
    relations_before = _relation_ids(ticket, [name for name, value in relations.items() if value is not None])
    _set_relations(ticket, **relations)
    if text_fields:  # after the relations, as before: the license's row is locked last
        _note_language(ticket.license, ticket.language)
    history.record_update(author_agent, before, relations_before, relations)
    ticket.last_added_message = added
    _announce_update(
        ticket, added=added, before=before, author_agent=author_agent, request_rating=request_rating
    )
    return ticket


def _teams_after(ticket: Ticket, teams, assignment: dict | None) -> list:
    """The teams the ticket will be visible to after the update (as _teams_kept_visible sets them)."""
    teams = list(ticket.teams.all()) if teams is None else list(teams)
    assigned = (assignment or {}).get("team", ticket.assignment_team)
    if not teams and ticket.license.default_team_id:
        teams = [ticket.license.default_team]
    return [*teams, assigned] if assigned is not None else teams


def _check_updatable(fields: dict) -> None:
    unknown = set(fields) - set(_UPDATABLE)
    if unknown:
        raise TypeError(f"unknown ticket fields {sorted(unknown)}")


def _locking(ticket_id, license_id):
    """The queryset of `_lock_ticket`: the statement of its `get()` (unordered, at most 21 rows)."""
    return (
        Ticket.objects.select_for_update(no_key=True, of=("self",))
        .select_related("license")
        .filter(pk=ticket_id, license_id=license_id)
        .order_by()[:MAX_GET_RESULTS]
    )


# The row-locked read compiled once (helpdesk.compiled), its instances built from the row as the ORM builds them:
# building and compiling the statement cost ~3.4 M instructions of every reply and PATCH (reply 27.81 -> 24.48 M,
# PATCH 14.22 -> 10.65 M; bench/README.md "Issue 34: the agent reply, fourth round").
_locked = Compiled(_locking, uuid.UUID, int)
_LOCKED_FIELDS = (list(Ticket._meta.concrete_fields), list(License._meta.concrete_fields))
_LOCKED_TARGETS = [*_LOCKED_FIELDS[0], *_LOCKED_FIELDS[1]]  # the columns as the instances are built from them


def _lock_ticket(ticket: Ticket) -> Ticket:
    """The ticket's row, locked (not its license's), with its license. `ticket` may be an unsaved Ticket with
    only its ID and license (the API's PATCH: this is its one read); not there → Ticket.DoesNotExist (404)."""
    # SQLite, or columns in another order than the instances' (a Django that selects otherwise): the ORM's get()
    if _locked.statement(ticket.pk, ticket.license_id) is None or _locked.targets != _LOCKED_TARGETS:
        return _locking(ticket.pk, ticket.license_id).get()
    rows = _locked.rows(ticket.pk, ticket.license_id)
    if not rows:
        raise Ticket.DoesNotExist("Ticket matching query does not exist.")
    db, width = router.db_for_write(Ticket), len(_LOCKED_FIELDS[0])
    locked = Ticket.from_db(db, None, rows[0][:width])
    Ticket.license.field.set_cached_value(locked, License.from_db(db, None, rows[0][width:]))
    return locked


def _check_writable(ticket: Ticket, fields: dict, others: list) -> None:
    """A ticket in a read-only silo changes only by moving back (`silo` alone)."""
    if ticket.silo not in READ_ONLY_SILOS:
        return
    if any(key != "silo" for key in fields) or any(value is not None for value in others):
        raise Conflict(
            f"Tickets in '{ticket.silo}' are read-only; move the ticket back (silo) first.",
            code="read_only_silo",
        )


def _apply_fields(ticket: Ticket, fields: dict, *, now, solving: bool) -> bool:
    """Set the fields (and when the status changed); True when this solve asks the customer for a rating."""
    if "status" in fields and fields["status"] != ticket.status:
        ticket.status_changed_at = now
    # One rating request per ticket, however often it is solved again (the flag commits with the status).
    request_rating = solving and not ticket.rating_requeest_sent
    if request_rating:
        ticket.rating_requeest_sent = True
    for key, value in fields.items():
        setattr(ticket, key, value)
    return request_rating


def _reassign(ticket: Ticket, assignment: dict) -> dict:
    """Apply the new assignment (the license's team and agent only); returns the assignment before it."""
    same_license(ticket.license, [assignment.get("team"), assignment.get("agent")], "assignment")
    before = assignment_side(ticket.assignment_team, ticket.assignment_agent)
    _apply_assignment(ticket, assignment)
    return before


def _add_reply(
    ticket: Ticket, message, transaction_id, *, author_type, author_agent, history
) -> Message | None:
    """Bind the attachment transaction to the ticket, and add the message, if any."""
    txn = _bind_transaction(ticket.license, transaction_id, ticket)
    if message is None:
        return None
    return _add_message(
        ticket, data=message, author_type=author_type, author_agent=author_agent, txn=txn, history=history
    )


# The ticket's UPDATE built once per process and list of fields (helpdesk.compiled), its save's signals sent:
# reply 23.04 -> 22.36 M, PATCH 9.56 -> 8.84 M (bench/README.md "Issue 34: the agent reply, fourth round")
_ticket_update = Update(Ticket)


def _save_update(ticket: Ticket, *, moved: bool, also: list[str]) -> None:
    """Save the ticket's row (and `also` these search columns, _refresh_text); `moved` (its silo or status
    changed): its team links follow."""
    stamp_update(ticket)
    fields = [*_SAVED_ON_UPDATE, *also]
    _ticket_update.save(ticket, fields, lambda: ticket.save(update_fields=fields))
    ticket.__dict__.pop("search_vector", None)  # the SQL expression: read from the row if ever needed
    if moved:
        sync_team_links(ticket)


def _teams_kept_visible(ticket: Ticket, teams):
    """The teams to set: never none (the license's default team), and always the assigned team."""
    if teams is not None and not teams and ticket.license.default_team_id:
        teams = [ticket.license.default_team]  # every ticket stays visible to at least one team
    # `teams is None` first: the assigned team is a query, and a write that leaves the teams needs none
    if teams is not None and ticket.assignment_team is not None and ticket.assignment_team not in teams:
        teams = [*teams, ticket.assignment_team]
    return teams


def _announce_update(ticket: Ticket, *, added, before: dict, author_agent, request_rating: bool) -> None:
    """The signals of an update: the new message, a new assignee, a rating to ask for."""
    if added is not None:
        message_created.send(sender=Message, message=added, ticket=ticket, created_ticket=False)
    if "assignment" in before and _newly_assigned(
        before["assignment"], assignment_side(ticket.assignment_team, ticket.assignment_agent)
    ):
        ticket_assigned.send(
            sender=Ticket,
            ticket=ticket,
            team=ticket.assignment_team,
            agent=ticket.assignment_agent,
            by_agent=author_agent or acting_agent(ticket.license_id),
        )
    if request_rating:
        rating_requested.send(sender=Ticket, ticket=ticket)


@unit_of_work
def ticket_delete(*, ticket: Ticket) -> Ticket:
    """DELETE moves the ticket to the trash (purged 30 days after its last update)."""
    ticket = Ticket.objects.select_for_update(no_key=True).get(pk=ticket.pk)
    if ticket.silo != "trash":
        totals.changing(ticket.license_id, [ticket.pk])
        history = History(ticket)
        history.change("silo", acting_author(ticket), ticket.silo, "trash")
        ticket.silo = "trash"
        stamp_update(ticket)
        Ticket.objects.filter(pk=ticket.pk).update(
            silo=ticket.silo, updated_at=ticket.updated_at, updated_by=ticket.updated_by
        )
        sync_team_links(ticket)
        history.save()
    return ticket


@unit_of_work
def ticket_merge(*, ticket: Ticket, child: Ticket) -> Ticket:
    """Make `child` a child of `ticket`, bounded by the license's maxChildTicketsPerTicket."""
    if child.license_id != ticket.license_id:
        raise field_error("childTicketID", f"'{child.pk}' does not exist in this license.")
    if child.pk == ticket.pk:
        raise Conflict("A ticket cannot be merged into itself.", code="merge_self")
    # Lock both in a fixed order so that two concurrent merges cannot deadlock.
    locked = {
        t.pk: t
        for t in Ticket.objects.select_for_update(no_key=True)
        .filter(pk__in=[ticket.pk, child.pk])
        .order_by("pk")
    }
    if len(locked) != 2:  # one was purged since the view read it (the API's error handler answers 404)
        raise Ticket.DoesNotExist("The ticket no longer exists.")
    ticket, child = locked[ticket.pk], locked[child.pk]
    license = License.objects.get(pk=ticket.license_id)
    for each in (ticket, child):
        if each.silo in READ_ONLY_SILOS:
            raise Conflict(f"Tickets in '{each.silo}' are read-only.", code="read_only_silo")
    if ticket.parent_id is not None:
        raise Conflict("This ticket is itself merged into another ticket.", code="merge_parent_is_child")
    if child.parent_id is not None:
        raise Conflict("That ticket is already merged into a ticket.", code="merge_already_merged")
    if Ticket.objects.filter(license_id=license.pk, parent_id=child.pk).exists():
        raise Conflict("A ticket with child tickets cannot become a child.", code="merge_child_has_children")
    limit = int((license.settings or {}).get("maxChildTicketsPerTicket", 25))
    if Ticket.objects.filter(license_id=license.pk, parent_id=ticket.pk).count() >= limit:
        raise Conflict(
            f"A ticket may have at most {limit} child tickets (maxChildTicketsPerTicket).",
            code="max_child_tickets",
        )
    totals.changing(license.pk, [ticket.pk, child.pk])
    history = History(ticket)
    _close_merged_child(child, parent=ticket, now=history.now)
    stamp_update(ticket)
    Ticket.objects.filter(pk=ticket.pk).update(updated_at=ticket.updated_at, updated_by=ticket.updated_by)
    history.add("merge", acting_author(ticket), payload={"childTicketID": str(child.pk)})
    history.save()
    return ticket


def _close_merged_child(child: Ticket, *, parent: Ticket, now) -> None:
    """Link the child and close it: its conversation goes on in the parent (mail to it threads there), so it
    waits for no one. Its `status` event has the merge's time, by which undoing the merge finds the status to
    give back (tickets.sub_resources.ticket_unmerge)."""
    child.parent = parent
    history = History(child, now=now)
    if child.status != "closed":
        history.change("status", acting_author(child), child.status, "closed")
        child.status, child.status_changed_at = "closed", now
    stamp_update(child)
    child.save(update_fields=["parent", "status", "status_changed_at", "updated_at", "updated_by"])
    sync_team_links(child)
    history.save()


@unit_of_work
def ticket_rate(*, ticket: Ticket, score: str, comment: str = "") -> Ticket:
    """The customer's rating of the ticket (`good` or `bad`, with an optional comment), and its event."""
    if score not in RATINGS:
        raise field_error("score", f"Must be one of {', '.join(RATINGS)}.")
    ticket = Ticket.objects.select_for_update(no_key=True).get(pk=ticket.pk)
    if ticket.is_read_only:
        raise Conflict(f"Tickets in '{ticket.silo}' are read-only.", code="read_only_silo")
    totals.changing(ticket.license_id, [ticket.pk])
    history = History(ticket)
    ticket.rating_score, ticket.rating_comment, ticket.rated_at = score, comment or "", history.now
    stamp_update(ticket)
    ticket.save(update_fields=["rating_score", "rating_comment", "rated_at", "updated_at", "updated_by"])
    rating = {"score": score, "comment": ticket.rating_comment, "ratedAt": iso(ticket.rated_at)}
    history.add("rating", acting_author(ticket), payload=rating)
    history.save()
    return ticket


# --- messages -------------------------------------------------------------------------------------------

DELIVERY_STATUSES = ["queued", "sent", "deferred", "bounced", "failed"]


@unit_of_work
def message_delivery_record(
    *, message_id, recipient: str, status: str, date: datetime | None = None
) -> Message:
    """Note how the e-mail of a message fared with one recipient: the recipient's entry is replaced (one entry
    per recipient, the latest outcome), else appended. Under the message's row lock, so that two deliveries
    reported at once both stay."""
    if status not in DELIVERY_STATUSES:
        raise ValueError(f"unknown delivery status {status!r}")
    message = Message.objects.select_for_update().get(pk=message_id)
    recipient = recipient.strip()
    entry = {"date": iso(date or timezone.now()), "status": status, "recipient": recipient}
    entries = [
        e for e in message.delivery_status or [] if e.get("recipient", "").lower() != recipient.lower()
    ]
    message.delivery_status = [*entries, entry]
    message.save(update_fields=["delivery_status"])
    return message


_QUEUED_SQL = 'UPDATE "tickets_message" SET "delivery_status" = %s WHERE "tickets_message"."id" = %s'


def message_deliveries_queued(*, message: Message, recipients: list[tuple[str, datetime]]) -> None:
    """Note that the e-mail of `message` was queued for these (recipient, date): one entry per recipient, as
    `message_delivery_record` writes them, in one UPDATE. For a message created in the caller's transaction
    (templates_app.ticket_mail, from `message_created`): no other writer can see its row yet, so the object is
    current and is not read again under a lock (issue 34: a statement less per recipient; with the two other
    statements of its step, an agent reply 50.2 -> 47.3 M instructions, bench/README.md "Issue 34: writes")."""
    queued = {recipient.strip().lower(): (recipient.strip(), date) for recipient, date in recipients}
    entries = [e for e in message.delivery_status or [] if e.get("recipient", "").lower() not in queued]
    for recipient, date in queued.values():
        entries.append({"date": iso(date), "status": "queued", "recipient": recipient})
    message.delivery_status = entries
    # The statement the ORM's `filter(pk=...).update(delivery_status=...)` sends, and the value as the field
    # prepares it: compiling it cost ~0.13 ms of CPU per mail queued by a write (issue 34, bench/README.md
    # "Issue 34: writes, continued").
    field, pk = Message._meta.get_field("delivery_status"), Message._meta.pk
    with connection.cursor() as cursor:
        cursor.execute(
            _QUEUED_SQL,
            [field.get_db_prep_save(entries, connection), pk.get_db_prep_value(message.pk, connection)],
        )


# --- tags -----------------------------------------------------------------------------------------------


def _check_tag_name(license: License, name: str, exclude=None) -> None:
    clash = Tag.objects.for_license(license).filter(name__iexact=name)
    if exclude is not None:
        clash = clash.exclude(pk=exclude.pk)
    if clash.exists():
        raise field_error("name", "A tag with this name already exists.", code="unique")


@unit_of_work
def tag_create(*, license: License, name: str) -> Tag:
    _check_tag_name(license, name)
    tag = Tag(license=license, name=name)
    stamp_create(tag)
    tag.save()
    return tag


@unit_of_work
def tag_update(*, tag: Tag, name: str | None = None) -> Tag:
    if name is not None:
        _check_tag_name(tag.license, name, exclude=tag)
        tag.name = name
    stamp_update(tag)
    tag.save()
    return tag


@unit_of_work
def tag_delete(*, tag: Tag) -> None:
    tag.delete()  # its tickets' totals follow (tickets.totals sees a tag's deletion)


# --- attachment transactions ---------------------------------------------------------------------------


@unit_of_work
def transaction_create(*, license: License) -> AttachmentTransaction:
    actor = current_actor()
    from accounts.models import Account

    account = Account.objects.filter(pk=actor.id).first() if actor.id else None
    return AttachmentTransaction.objects.create(license=license, created_by=account)


def _check_upload_quotas(txn: AttachmentTransaction, files) -> None:
    """Files per transaction and bytes per license (settings.UPLOAD_MAX_*), so one agent cannot fill the disk.

    Uploads of one license are serialized from here to commit (a PostgreSQL advisory lock; SQLite has one
    writer), so two concurrent uploads cannot both pass the check. Not the license row, which agent and team
    changes hold for their whole transaction.
    """
    max_files = settings.UPLOAD_MAX_FILES_PER_TRANSACTION
    if max_files and txn.attachments.count() + len(files) > max_files:
        raise TooLarge(
            f"A transaction holds at most {max_files} files; start a new transaction for more.",
            code="transaction_file_limit",
        )
    max_bytes = settings.UPLOAD_MAX_LICENSE_BYTES
    if not max_bytes:
        return
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s, %s)", [_UPLOAD_LOCK_SPACE, txn.license_id % 2**31]
            )
    used = Attachment.objects.filter(license_id=txn.license_id).aggregate(total=Sum("size"))["total"] or 0
    if used + sum(upload.size for upload in files) > max_bytes:
        raise TooLarge(
            f"The license's attachment storage is full ({used} of {max_bytes} bytes used); "
            "delete old tickets or ask the operator to raise UPLOAD_MAX_LICENSE_BYTES.",
            code="license_storage_full",
        )


@unit_of_work
def attachments_add(*, txn: AttachmentTransaction, files) -> list[Attachment]:
    """Store uploaded files through Django's storage API, with size, type, sha256 and a token."""
    txn = AttachmentTransaction.objects.select_for_update().get(pk=txn.pk)
    if txn.bound_id is not None:
        raise Conflict("This transaction is already used; start a new one.", code="transaction_bound")
    _check_upload_quotas(txn, files)
    stored = []
    for upload in files:
        digest = hashlib.sha256()
        for chunk in upload.chunks():
            digest.update(chunk)
        upload.seek(0)
        attachment = Attachment(
            license_id=txn.license_id,
            transaction=txn,
            name=upload.name[:255],
            content_type=(upload.content_type or "application/octet-stream")[:255],
            size=upload.size,
            sha256=digest.hexdigest(),
            token=secrets.token_urlsafe(24),
        )
        attachment.file.save(upload.name, upload, save=False)
        # the file goes if its row does: a failed write (a duplicate mail, a mail stored again) leaves none
        on_rollback(lambda file=attachment.file: file.delete(save=False))
        attachment.save()
        stored.append(attachment)
    return stored

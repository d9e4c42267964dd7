"""Who is acting right now: set once per request, admin action, task or command, read by services and audit.

A ContextVar rather than a thread-local so that it is correct under threads and asyncio alike.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import uuid

# The author types of the audit log (seed spec), also used for createdByType where they map.
ADMINISTRATOR = "administrator"
AGENT = "agent"
API = "api"
SCHEDULED_TASK = "scheduledTask"
EMAIL_MESSAGE = "emailMessage"
PAYMENT_PROVIDER = "paymentProvider"
HELPDESK_SYSTEM = "helpdeskSystem"
AUTHOR_TYPES = [ADMINISTRATOR, AGENT, API, SCHEDULED_TASK, EMAIL_MESSAGE, PAYMENT_PROVIDER, HELPDESK_SYSTEM]
# Actors that are a person with an account (the others are the system in one of its roles).
PERSON_TYPES = frozenset({ADMINISTRATOR, AGENT, API})

# The ID of everything the system does itself (scheduled tasks, e-mail, the payment provider, commands): the
# `createdBy`/`updatedBy` of what it creates and the `author.ID` of its audit entries, so a field the spec types
# as uuid is never null. It is no agent's ID (agent IDs are random UUIDs, this one is all zeros but its version).
SYSTEM_ACTOR_ID = uuid.UUID("00000000-0000-4000-8000-000000000000")


@dataclasses.dataclass(frozen=True)
class Actor:
    type: str = HELPDESK_SYSTEM
    id: uuid.UUID | None = None  # the person's account ID (PERSON_TYPES), else None
    email: str = ""
    # The account's agent in the license the request is for (the API knows it from authentication), so the
    # ID a client sees in `createdBy`, `updatedBy` and `author.ID` is the one `/v1/agents` lists.
    agent_id: uuid.UUID | None = None
    license_id: int | None = None
    ip: str = ""
    user_agent: str = ""
    app_name: str = ""  # the OAuth app acting for the person (Bearer requests), else ""
    # Where the actor acts from when it is not its type's usual place (tickets.events.SOURCE_BY_ACTOR): `web`
    # for a customer on a public page; "" for the usual one.
    source: str = ""

    @property
    def created_by_type(self) -> str:
        """The spec's createdByType (agent, client, system) for an object this actor creates."""
        if self.type == EMAIL_MESSAGE:
            return "client"  # a ticket made from a customer's e-mail (contract: createdByType client)
        return "agent" if self.type in (ADMINISTRATOR, AGENT, API) else "system"


SYSTEM = Actor()
_current: contextvars.ContextVar[Actor] = contextvars.ContextVar("helpdesk_actor", default=SYSTEM)


def current_actor() -> Actor:
    return _current.get()


def set_actor(actor: Actor) -> contextvars.Token:
    return _current.set(actor)


def reset_actor(token: contextvars.Token) -> None:
    _current.reset(token)


@contextlib.contextmanager
def acting_as(actor: Actor):
    token = _current.set(actor)
    try:
        yield actor
    finally:
        _current.reset(token)


def update_actor(**changes) -> Actor:
    """Refine the current actor (authentication knows who, the middleware already knew the IP)."""
    actor = dataclasses.replace(_current.get(), **changes)
    _current.set(actor)
    return actor

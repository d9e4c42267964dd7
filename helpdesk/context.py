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


@dataclasses.dataclass(frozen=True)
class Actor:
    type: str = HELPDESK_SYSTEM
    id: uuid.UUID | None = None
    email: str = ""
    ip: str = ""
    user_agent: str = ""

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

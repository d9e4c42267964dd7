"""Whether a requester is a blocked sender: the e-mail app keeps the lists (`/v1/blockedEmails`,
templates_app.senders) and registers its check here from its `AppConfig.ready()`, so that tickets, below it,
applies them without importing it: a client's new ticket through the API from a blocked sender goes to `spam`,
as the same sender's mail does."""

from __future__ import annotations

from collections.abc import Callable

_blocked: Callable[..., bool] | None = None


def register(blocked: Callable[..., bool]) -> None:
    """`blocked(license, email)`: whether the address (or its domain) is blocked in the license."""
    global _blocked
    _blocked = blocked


def is_blocked(license, email: str) -> bool:
    return _blocked is not None and bool(email) and _blocked(license, email)

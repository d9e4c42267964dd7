"""Placeholders in the texts agents send from tickets: canned responses, macros' and rules' messages.

`{{ticket.shortID}}`, `{{requester.name}}`, `{{agent.name}}`... are the e-mail templates' placeholders, filled
by the same engine as the templates' preview (templates_app.rendering). The e-mail app sits above tickets
(docs/architecture.md), so it registers the engine here from its `AppConfig.ready()` and tickets never imports
it: tickets asks only two questions, which placeholders of a text are unknown (a 400 at save, never blank text in
a customer's mailbox) and what a text reads as for one ticket.
"""

from __future__ import annotations

from typing import Protocol

from django.core.exceptions import ImproperlyConfigured

from helpdesk.errors import field_error


class Engine(Protocol):
    def unknown(self, text: str) -> list[str]:
        """The placeholders in `text` the engine does not know, sorted."""

    def render(self, *, text: str, ticket, agent) -> tuple[str, str]:
        """`text` filled for `ticket`, written by `agent` (or None): (text, richTextHtml)."""


_engine: Engine | None = None


def register(engine: Engine) -> None:
    global _engine
    _engine = engine


def _current() -> Engine:
    if _engine is None:
        raise ImproperlyConfigured(
            "No placeholder engine is registered (templates_app registers it at ready())."
        )
    return _engine


def unknown(text: str) -> list[str]:
    return _current().unknown(text)


def check(field: str, text: str) -> None:
    """An unknown placeholder in `text` is a 400 naming `field` and the placeholder."""
    names = unknown(text)
    if names:
        listed = ", ".join("{{" + name + "}}" for name in names)
        raise field_error(field, f"Unknown placeholder {listed}.", code="unknown_placeholder")


def render(*, text: str, ticket, agent) -> tuple[str, str]:
    return _current().render(text=text, ticket=ticket, agent=agent)

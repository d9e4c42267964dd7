"""Admin of tickets and tags (written through tickets.services), and of the purge runs (read-only)."""

from tickets.admin import (  # noqa: F401  (registers the admins)
    canned_responses,
    custom_fields,
    purge,
    rules,
    sla,
    tags,
    tickets,
    views,
)

"""Admin of tickets and tags (written through tickets.services), and of the purge runs (read-only)."""

from tickets.admin import custom_fields, purge, tags, tickets, views  # noqa: F401  (registers the admins)

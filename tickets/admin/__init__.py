"""Admin of tickets and tags (written through tickets.services), and of the purge runs (read-only)."""

from tickets.admin import canned_responses, purge, rules, tags, tickets  # noqa: F401  (registers the admins)

"""Signals of the accounts services, for the apps built on accounts (which accounts never imports)."""

from django.dispatch import Signal

# Sent by accounts.services inside the write's transaction when an agent stops taking tickets of some teams:
# deactivated or deleted (`team_ids` None: every team), or removed from teams (`team_ids`: those teams).
# Sent before a deletion, while the agent's row still exists. Keyword arguments: `agent`, `team_ids`.
# tickets.autoassign gives the agent's open tickets back to their teams.
agent_leaving = Signal()

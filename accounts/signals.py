"""Signals of the accounts services, for the apps built on accounts (which accounts never imports)."""

from django.dispatch import Signal

# Sent by accounts.services inside the write's transaction when an agent stops taking tickets of some teams:
# deactivated or deleted (`team_ids` None: every team), or removed from teams (`team_ids`: those teams).
# Sent before a deletion, while the agent's row still exists. Keyword arguments: `agent`, `team_ids`.
# tickets.autoassign gives the agent's open tickets back to their teams.
agent_leaving = Signal()

# Sent by accounts.services.license_create inside its transaction, once the license has its default team and its
# owner agent. Keyword arguments: `license`, `owner` (the owner Agent), `plan_code` (None: the operator's default),
# `coupon_code`. templates_app gives the license its default template, billing starts its trial. A receiver that
# raises undoes the whole license (nothing is half-created).
license_created = Signal()

# Sent before an agent takes a seat (created active, or an invited agent accepting), inside the write's
# transaction. Keyword argument: `license`. billing locks the license row and refuses (409 `seat_limit_reached`)
# when the paid seats are taken.
agent_activating = Signal()

# Sent when an agent is created `invited`, inside the write's transaction. Keyword argument: `agent`.
# templates_app records the invitation and e-mails it after commit.
agent_invited = Signal()

# Sent when a team's create or update names a reply address, before the team is saved. Keyword arguments:
# `license`, `reply_address_id`. templates_app (which owns the addresses) refuses one that is not the license's
# (400 naming replyAddressID).
team_reply_address_chosen = Signal()

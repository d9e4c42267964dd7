"""Signals of the ticket services (receivers run inside the service's transaction)."""

from django.dispatch import Signal

# Sent by tickets.services after a message is saved, inside the transaction that writes it (a receiver that
# writes rows, such as the mail outbox, commits or rolls back with the message), once the ticket's relations
# are final. Keyword arguments: `message` (tickets.Message), `ticket` (tickets.Ticket), `created_ticket` (True
# for the first message of a new ticket).
message_created = Signal()

# Sent by the purge (tickets.purge) inside a batch's transaction, before it deletes the messages and tickets of
# `ticket_ids` (all of license `license_id`): receivers delete their own rows that point at them, in bounded
# statements led by the license. Keyword arguments: `license_id`, `ticket_ids`.
tickets_purging = Signal()

# Sent by tickets.events.History.save() after it writes a change's events, inside that transaction, with the
# ticket's relations final. Keyword arguments: `ticket`, `events` (the saved TicketEvent rows, in order),
# `created` (True for the events of a new ticket).
events_recorded = Signal()

# Sent by tickets.services (and the autoassignment) inside the write's transaction when a ticket gets a new
# assignee: `ticket`, `team` (the assigned team or None), `agent` (the assigned agent or None), `by_agent` (the
# agent who made the change, None for the system). The e-mail app notifies the assignee from it.
ticket_assigned = Signal()

# Sent by tickets.actions.follow_up (a rule's or a macro's `notifyAgents`) inside the write's transaction: `ticket`,
# `agents` (the agents to tell; None: the team that answers the ticket), `by_agent` (who applied it, None for a
# rule). The e-mail app notifies them as it does of an assignment (their settings honoured).
agents_notified = Signal()

# Sent by tickets.services inside the transaction that solves a ticket whose rating request was not sent yet
# (`ratingRequeestSent` turned true in that same transaction): `ticket`; also when an agent asks now
# (tickets.sub_resources.ticket_rating_request), with `asked_at`. The e-mail app sends the request.
rating_requested = Signal()

# Sent by tickets.webhooks.delivery inside the transaction that marks a webhook `failing` (once, when it turns
# failing): `webhook`, `delivery` (the delivery it gave up on). The e-mail app tells the license's owners.
webhook_failing = Signal()

"""The placeholder engine tickets uses for the texts agents send (tickets.placeholders), registered at ready().

The context is a ticket's, as the mail of a reply has it (templates_app.ticket_mail): the ticket's subject and
short ID, the requester, the latest public message's text, the writing agent's name and signature, the license's
company name.
"""

from __future__ import annotations

from templates_app import mail, rendering


class TicketPlaceholders:
    @staticmethod
    def unknown(text: str) -> list[str]:
        return rendering.unknown_placeholders(text)

    @staticmethod
    def render(*, text: str, ticket, agent) -> tuple[str, str]:
        latest = (
            ticket.messages.filter(is_private=False).order_by("-created_at").values_list("text", flat=True)
        )
        context = mail.license_context(
            license=ticket.license,
            agent=agent,
            **{
                "ticket.subject": ticket.subject,
                "ticket.shortID": ticket.short_id,
                "requester.name": ticket.requester_name,
                "requester.email": ticket.requester_email,
                "message.text": latest.first() or "",
            },
        )
        rendered = rendering.render_text(text, context)
        return rendered.text, rendered.html

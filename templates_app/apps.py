from django.apps import AppConfig


class TemplatesAppConfig(AppConfig):
    name = "templates_app"
    verbose_name = "E-mail"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The e-mail app reacts to the events of accounts and tickets (neither imports it).
        from accounts.signals import agent_invited, license_created, team_reply_address_chosen
        from templates_app import (
            invitations,
            mail,
            notifications,
            rating,
            reply_addresses,
            services,
            ticket_mail,
        )
        from templates_app.inbound import services as inbound
        from templates_app.models import OutboundMessage
        from templates_app.reports import register_reports
        from templates_app.webhook_failing import on_webhook_failing
        from tickets.signals import (
            agents_notified,
            message_created,
            rating_requested,
            ticket_assigned,
            tickets_purging,
            webhook_failing,
        )

        message_created.connect(ticket_mail.on_message_created, dispatch_uid="templates_app.ticket_mail")
        _own_addresses_versioned()
        # a ticket's mail is rendered by the worker that sends it (issue 34)
        for kind in (OutboundMessage.KIND_REPLY, OutboundMessage.KIND_ACKNOWLEDGEMENT):
            mail.RENDERERS[kind] = ticket_mail.render_queued
        mail.RENDERERS[rating.KIND] = rating.render_queued  # a solve's rating request too
        message_created.connect(notifications.on_message_created, dispatch_uid="templates_app.notifications")
        ticket_assigned.connect(notifications.on_ticket_assigned, dispatch_uid="templates_app.notifications")
        agents_notified.connect(notifications.on_agents_notified, dispatch_uid="templates_app.notifications")
        rating_requested.connect(rating.on_rating_requested, dispatch_uid="templates_app.rating")
        tickets_purging.connect(
            ticket_mail.on_tickets_purging, dispatch_uid="templates_app.ticket_mail.purge"
        )
        tickets_purging.connect(inbound.on_tickets_purging, dispatch_uid="templates_app.inbound.purge")
        tickets_purging.connect(notifications.on_tickets_purging, dispatch_uid="templates_app.notifications")
        license_created.connect(services.on_license_created, dispatch_uid="templates_app.default_template")
        agent_invited.connect(invitations.on_agent_invited, dispatch_uid="templates_app.invitations")
        team_reply_address_chosen.connect(
            reply_addresses.on_team_reply_address_chosen, dispatch_uid="templates_app.reply_addresses"
        )
        webhook_failing.connect(on_webhook_failing, dispatch_uid="templates_app.webhook_failing")
        _register_audited()
        _register_sender_lists()
        _register_license_copies()
        _register_placeholders()
        register_reports()  # failedEmails, among tickets' reports


def _own_addresses_versioned():
    """Each process's copy of a license's own addresses is dropped by any save or delete of one."""
    from django.db.models.signals import post_delete, post_save

    from templates_app import ticket_mail
    from templates_app.models import Mailbox, ReplyAddress

    for model in (ReplyAddress, Mailbox):
        uid = f"templates_app.own_addresses.{model.__name__}"
        post_save.connect(ticket_mail.own_addresses_changed, sender=model, dispatch_uid=uid + ".save")
        post_delete.connect(ticket_mail.own_addresses_changed, sender=model, dispatch_uid=uid + ".delete")


def _register_audited():
    """The e-mail app's audited models (audit/registry.py; audit, below this app, imports none of them)."""
    from audit.registry import register
    from templates_app.models import (
        BlockedSender,
        ContactForm,
        EmailDomain,
        Mailbox,
        ReplyAddress,
        Template,
        TrustedSender,
    )

    register(Template, target="emailTemplates", m2m={"attachments": "attachments"})
    register(ReplyAddress, target="replyAddresses")
    register(BlockedSender, target="blockedEmails")
    register(TrustedSender, target="trustedEmails")
    register(ContactForm, target="contactForms")
    register(Mailbox, target="mailboxes", secrets=("imap_password",))
    # the key pair and the last DNS check are no one's edit: the private key recorded only as changed
    register(
        EmailDomain, target="emailDomains", secrets=("private_key",), exclude=("public_key", "last_check")
    )


def _register_sender_lists():
    """Tickets sends a blocked sender's new ticket through the API to spam with this app's list."""
    from templates_app.inbound.selectors import is_blocked
    from tickets import sender_lists

    sender_lists.register(is_blocked)


def _register_license_copies():
    """The inbound service's copies of a license (templates_app.inbound.selectors): dropped by any change."""
    from django.db.models.signals import post_delete, post_save

    from accounts.models import License, Team
    from templates_app.inbound.selectors import license_changed
    from templates_app.models import Template

    for model in (License, Team, Template):
        for signal in (post_save, post_delete):
            signal.connect(
                license_changed, sender=model, dispatch_uid=f"templates_app.inbound.license.{model.__name__}"
            )


def _register_placeholders():
    """Tickets' canned responses and macros fill the templates' placeholders with this app's engine."""
    from templates_app.placeholders import TicketPlaceholders
    from tickets import placeholders

    placeholders.register(TicketPlaceholders())

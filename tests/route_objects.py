"""For the tenancy walk: how to make, inside a given license, an object that each detail route can address.

Every registered API route with a `{pk}` must have an entry here (keyed by the router basename), so that
`test_tenancy.py` can prove that an outsider gets 404 for it. A new viewset adds its entry.
"""

from tests.factories import (
    AgentFactory,
    CustomFieldFactory,
    SubscriptionFactory,
    TagFactory,
    TeamFactory,
    TemplateFactory,
    TicketFactory,
)


def _license_pk(license):
    return license.pk


def _transaction_pk(license):
    from accounts.models import AttachmentTransaction

    return AttachmentTransaction.objects.create(license=license).pk


def _reply_address_pk(license):
    from templates_app.models import ReplyAddress

    return ReplyAddress.objects.create(license=license, email=f"support{license.pk}@example.com").pk


def _blocked_email_pk(license):
    from templates_app.models import BlockedSender

    return BlockedSender.objects.create(license=license, email=f"@blocked{license.pk}.example").pk


def _email_domain_pk(license):
    from templates_app.domains import email_domain_create

    return email_domain_create(license=license, name=f"mail{license.pk}.example").pk


def _trusted_email_pk(license):
    from templates_app.models import TrustedSender

    return TrustedSender.objects.create(license=license, email=f"@trusted{license.pk}.example").pk


def _contact_form_pk(license):
    from templates_app.models import ContactForm

    return ContactForm.objects.create(license=license, name=f"Contact {license.pk}").pk


def _mailbox_pk(license):
    from templates_app.mailboxes import mailbox_create

    return mailbox_create(license=license, name="Support", email=f"support{license.pk}@acme.example").pk


def _webhook_pk(license):
    from tickets.webhooks.models import Webhook

    return Webhook.objects.create(
        license=license,
        name="hook",
        url="https://hooks.example.com/",
        event_type="tickets.create",
        secret="x" * 20,
    ).pk


def _canned_response_pk(license):
    from tickets.canned_responses.services import canned_response_create

    return canned_response_create(license=license, text="Thanks.").pk


def _macro_pk(license):
    from tickets.macros.services import macro_create

    return macro_create(license=license, name="macro", visibility="shared", actions=[]).pk


def _rule_pk(license):
    from tickets.rules.services import rule_create

    return rule_create(license=license, name="rule", triggers=[], actions=[]).pk


def _business_hours_pk(license):
    from tickets.sla.services import business_hours_create

    return business_hours_create(
        license=license, name="Office", timezone="Europe/Warsaw", week={"mon": [["09:00", "17:00"]]}
    ).pk


def _sla_policy_pk(license):
    from tickets.sla.services import sla_policy_create

    return sla_policy_create(license=license, name="Standard", targets={"0": {"resolutionMinutes": 60}}).pk


def _view_pk(license):
    from tickets.saved_views.models import View

    return View.objects.create(license=license, name="Open tickets").pk


def _app_pk(license):
    from tests.oauth_helpers import make_app

    return make_app(license).pk


def _grant_pk(license):
    from tests.oauth_helpers import make_grant

    return make_grant(license).pk


ROUTE_OBJECTS = {
    "license": _license_pk,
    "agent": lambda license: AgentFactory(license=license).pk,
    "team": lambda license: TeamFactory(license=license).pk,
    "ticket": lambda license: TicketFactory(license=license).pk,
    "tag": lambda license: TagFactory(license=license).pk,
    "cannedresponse": _canned_response_pk,
    "macro": _macro_pk,
    "rule": _rule_pk,
    "business-hours": _business_hours_pk,
    "sla-policy": _sla_policy_pk,
    "transaction": _transaction_pk,
    "template": lambda license: TemplateFactory(license=license).pk,
    "subscription": lambda license: SubscriptionFactory(license=license).pk,
    "reply-address": _reply_address_pk,
    "blocked-email": _blocked_email_pk,
    "trusted-email": _trusted_email_pk,
    "contact-form": _contact_form_pk,
    "mailbox": _mailbox_pk,
    "emaildomain": _email_domain_pk,
    "webhook": _webhook_pk,
    "view": _view_pk,
    "custom-field": lambda license: CustomFieldFactory(license=license).pk,
    "app": _app_pk,
    "app-grant": _grant_pk,
    "report": lambda license: "newTickets",  # a name, not an object (test_tenancy.NOT_OBJECT_ROUTES)
}

"""Factories that keep a whole object graph inside one license (sub-factories take the parent's license)."""

import contextlib
import datetime
import itertools

import factory
from django.utils import timezone

from accounts import services
from accounts.models import ROLE_NORMAL, STATUS_ACTIVE, Account, Agent, License, Team
from billing.models import ACTIVE, Subscription
from billing.plans import PLANS


class AccountFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Account
        django_get_or_create = ("email",)

    email = factory.Sequence(lambda n: f"person{n}@example.com")
    name = factory.Faker("name")


_owner_numbers = itertools.count(1)


class LicenseFactory(factory.django.DjangoModelFactory):
    """A license made the real way: default team, default template, an active owner, a trial subscription.

    `trial=False` (the default here) makes it without the trial, so billing tests start from a license that
    has never subscribed; pass `trial=True` for the license exactly as onboarding leaves it.
    """

    class Meta:
        model = License

    @classmethod
    def _create(cls, model_class, *args, owner_email=None, company_name="Acme", trial=False, **kwargs):
        owner_email = owner_email or f"owner{next(_owner_numbers)}@example.com"
        with contextlib.nullcontext() if trial else _without_the_trial():
            return services.license_create(
                owner_email=owner_email, owner_name="Owner", company_name=company_name
            )


@contextlib.contextmanager
def _without_the_trial():
    """license_create without billing's receiver, which starts the trial: a license that never subscribed.
    Starting the trial and deleting it again (with their audit entries) was a fifth to a third of the CPU of a
    license's creation, and LicenseFactory makes one or two per test (measured 2026-11-26, CPU a license:
    SQLite 19.3 -> 12.3 ms, PostgreSQL 36.6 -> 30.6 ms)."""
    from accounts.signals import license_created
    from billing.services import on_license_created

    license_created.disconnect(dispatch_uid="billing.trial")
    try:
        yield
    finally:
        license_created.connect(on_license_created, dispatch_uid="billing.trial")


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team

    license = factory.SubFactory(LicenseFactory)
    name = factory.Sequence(lambda n: f"Team {n}")


class AgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Agent

    license = factory.SubFactory(LicenseFactory)
    account = factory.SubFactory(AccountFactory)
    email = factory.LazyAttribute(lambda o: o.account.email)
    name = factory.LazyAttribute(lambda o: o.account.name)
    roles = factory.LazyFunction(lambda: [ROLE_NORMAL])
    status = STATUS_ACTIVE


class TagFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "tickets.Tag"

    license = factory.SubFactory(LicenseFactory)
    name = factory.Sequence(lambda n: f"tag-{n}")


class TicketFactory(factory.django.DjangoModelFactory):
    """A ticket made the real way (tickets.services.ticket_create: short ID, first message, language, search
    text); any other model field given (created_at, status, silo, priority, custom_fields, ...) is then set
    directly, so tests can place tickets exactly where a filter should or should not find them."""

    class Meta:
        model = "tickets.Ticket"

    license = factory.SubFactory(LicenseFactory)
    subject = factory.Sequence(lambda n: f"Ticket number {n}")

    @classmethod
    def _create(
        cls,
        model_class,
        license,
        subject,
        text="Hello, my order did not arrive yet. Could you please check where it is?",
        requester=None,
        author_type="client",
        teams=None,
        tags=None,
        followers=None,
        assignment=None,
        **fields,
    ):
        from tickets import services as ticket_services

        ticket = ticket_services.ticket_create(
            license=license,
            subject=subject,
            requester=requester or {"email": "client@example.com", "name": "Client"},
            message={"text": text},
            author_type=author_type,
            teams=teams,
            tags=tags,
            followers=followers,
            assignment=assignment,
        )
        if fields:
            from helpdesk.transactions import unit_of_work
            from tickets import totals

            # a write outside the services: the license's totals are counted again
            with unit_of_work():
                totals.changing(license.pk)
                model_class.objects.filter(pk=ticket.pk).update(**fields)
                ticket.refresh_from_db()
                if {"silo", "status"} & set(fields):
                    ticket_services.sync_team_links(ticket)  # as the services keep them
        return ticket


class TemplateFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "templates_app.Template"

    license = factory.SubFactory(LicenseFactory)
    name = factory.Sequence(lambda n: f"Template {n}")
    type = "html"
    content = factory.LazyFunction(
        lambda: {
            "text": "Hello {{requester.name}}",
            "html": "<p>Hello {{requester.name}}</p>",
            "appearance": {},
        }
    )


class SubscriptionFactory(factory.django.DjangoModelFactory):
    """An active, paid subscription in the middle of nothing: its period starts now (no charge recorded)."""

    class Meta:
        model = Subscription

    license = factory.SubFactory(LicenseFactory)
    state = ACTIVE
    plan_code = "hd-team1m"
    quantity = 5
    unit_amount_in_cents = factory.LazyAttribute(lambda o: PLANS[o.plan_code].unit_amount)
    period_months = factory.LazyAttribute(lambda o: PLANS[o.plan_code].months)
    activated_at = factory.LazyFunction(timezone.now)
    current_period_started_at = factory.LazyAttribute(lambda o: o.activated_at)
    current_period_ends_at = factory.LazyAttribute(
        lambda o: o.current_period_started_at + datetime.timedelta(days=30 * o.period_months)
    )


class CustomFieldFactory(factory.django.DjangoModelFactory):
    """A custom field definition (singleLine unless told), its teams given as `teams=[...]`."""

    class Meta:
        model = "tickets.CustomField"
        skip_postgeneration_save = True

    license = factory.SubFactory(LicenseFactory)
    api_key = factory.Sequence(lambda n: f"field{n}")
    display_name = factory.LazyAttribute(lambda o: o.api_key)
    type = "singleLine"

    @factory.post_generation
    def teams(self, create, teams, **kwargs):
        if create and teams:
            self.teams.set(teams)

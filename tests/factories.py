"""Factories that keep a whole object graph inside one license (sub-factories take the parent's license)."""

import itertools

import factory

from accounts import services
from accounts.models import ROLE_NORMAL, STATUS_ACTIVE, Account, Agent, License, Team


class AccountFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Account
        django_get_or_create = ("email",)

    email = factory.Sequence(lambda n: f"person{n}@example.com")
    name = factory.Faker("name")


_owner_numbers = itertools.count(1)


class LicenseFactory(factory.django.DjangoModelFactory):
    """A license made the real way: with its default team and an active owner."""

    class Meta:
        model = License

    @classmethod
    def _create(cls, model_class, *args, owner_email=None, company_name="Acme", **kwargs):
        owner_email = owner_email or f"owner{next(_owner_numbers)}@example.com"
        return services.license_create(owner_email=owner_email, owner_name="Owner", company_name=company_name)


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
            model_class.objects.filter(pk=ticket.pk).update(**fields)
            ticket.refresh_from_db()
        return ticket

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

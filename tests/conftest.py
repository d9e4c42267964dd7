"""Personas (owner, agent, viewer of one license; an outsider from another), each with an API client."""

import base64
import os

import pytest
from django.conf import settings
from django.core.cache import cache
from rest_framework.test import APIClient

from accounts import services
from accounts.models import ROLE_NORMAL, ROLE_VIEWER
from tests.factories import AgentFactory, LicenseFactory

BACKENDS = set(filter(None, os.environ.get("HELPDESK_TEST_BACKENDS", "").split(",")))


def pytest_collection_modifyitems(config, items):
    on_postgres = settings.IS_POSTGRES
    has_redis = bool(settings.REDIS_URL)
    for item in items:
        if "postgres" in item.keywords and not on_postgres:
            item.add_marker(pytest.mark.skip(reason="PostgreSQL only (runs in the PostgreSQL pass)"))
        if "redis" in item.keywords and not has_redis:
            item.add_marker(pytest.mark.skip(reason="needs Redis (runs in the PostgreSQL + Redis pass)"))


@pytest.fixture(autouse=True)
def _clean_cache():
    cache.clear()
    yield


class Persona:
    def __init__(self, agent, token):
        self.agent = agent
        self.account = agent.account
        self.license = agent.license
        self.token = token
        self.client = api_client(agent.account_id, token)


def api_client(account_id, token) -> APIClient:
    client = APIClient(HTTP_USER_AGENT="helpdesk-tests/1.0")
    credentials = base64.b64encode(f"{account_id}:{token}".encode()).decode()
    client.credentials(HTTP_AUTHORIZATION=f"Basic {credentials}")
    return client


def make_persona(agent) -> Persona:
    _, token = services.token_issue(account=agent.account, name="test")
    return Persona(agent, token)


@pytest.fixture
def license(db):
    return LicenseFactory(company_name="Acme")


@pytest.fixture
def owner(license):
    return make_persona(license.agents.order_by("created_at").first())


@pytest.fixture
def agent(license):
    return make_persona(AgentFactory(license=license, roles=[ROLE_NORMAL]))


@pytest.fixture
def viewer(license):
    return make_persona(AgentFactory(license=license, roles=[ROLE_VIEWER]))


@pytest.fixture
def other_license(db):
    return LicenseFactory(company_name="Other Corp")


@pytest.fixture
def outsider(other_license):
    """The owner of another license: everything of `license` must be a 404 to them."""
    return make_persona(other_license.agents.get())


@pytest.fixture
def personas(owner, agent, viewer):
    return {"owner": owner, "normal": agent, "viewer": viewer}

"""The resource machinery (helpdesk/api/resources.py): every resource viewset is routed at its name, has the
generic tests (tests/resource_tests.py), and a misdeclared one is refused when its class is defined; a resource
that publishes gets one webhook delivery per write."""

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

import tests.test_tickets_tags as tag_tests
from helpdesk.api.pagination import KeysetPagination
from helpdesk.api.resources import ReadOnlyResourceViewSet, ResourceViewSet, published, resources
from tests.resource_tests import ResourceTests, assert_publishes
from tests.test_tenancy import _viewset_routes
from tickets.api.views import TagViewSet
from tickets.models import Tag


def test_every_resource_viewset_is_routed_at_its_name():
    routed = {}
    for route, _pattern, cls, _actions in _viewset_routes():
        if issubclass(cls, ReadOnlyResourceViewSet):
            routed.setdefault(cls, set()).add(route.removeprefix("v1/").split("/")[0].strip("^$"))
    assert routed.keys() == set(resources().values())
    for cls, prefixes in routed.items():
        assert prefixes == {cls.resource_name}, cls


def test_every_resource_has_the_generic_tests():
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        if "(ResourceTests)" in path.read_text():  # importing every test module would take ~12 s
            importlib.import_module(f"tests.{path.stem}")
    tested = {case.resource.viewset for case in _subclasses(ResourceTests)}
    untested = sorted(cls.__name__ for cls in set(resources().values()) - tested)
    assert not untested, f"give these a ResourceTests class (tests/resource_tests.py): {untested}"


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_a_resource_that_publishes_sends_one_event_per_write(owner, monkeypatch):
    from tests.test_tickets_tags import TestTagResource

    # given tags declared as publishing (none of today's resources publishes; the next ones do)
    monkeypatch.setattr(TagViewSet, "webhook_events", True)
    assert published()[Tag][0] == "tags"
    # then each write is one delivery of tags.<action> carrying the tag
    assert_publishes(TestTagResource.resource, owner)


def test_a_resource_that_publishes_adds_its_event_types_to_the_subscribable_ones(owner, monkeypatch):
    body = {"name": "n", "url": "https://93.184.215.14/", "eventType": "tags.update"}
    refused = owner.client.post("/v1/webhooks", body, format="json")
    assert refused.status_code == 400 and "eventType" in refused.json()["details"]
    monkeypatch.setattr(TagViewSet, "webhook_events", True)
    created = owner.client.post("/v1/webhooks", body, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["eventType"] == "tags.update"


def test_a_resource_without_its_declarations_is_refused_when_defined():
    with pytest.raises(ImproperlyConfigured, match="audit_target"):

        class NoAudit(ResourceViewSet):
            resource_name = "things"
            queryset = Tag.objects.all()
            create_service = update_service = delete_service = staticmethod(lambda **kwargs: None)
            openapi_tag, noun = ("Things", "Things."), ("thing", "things")

    with pytest.raises(ImproperlyConfigured, match="update_service"):

        class NoUpdate(ResourceViewSet):
            resource_name = "things"
            queryset = Tag.objects.all()
            create_service = delete_service = staticmethod(lambda **kwargs: None)
            audit_target = "tags"
            openapi_tag, noun = ("Things", "Things."), ("thing", "things")

    with pytest.raises(ImproperlyConfigured, match="write_serializer_class"):

        class NoInput(ResourceViewSet):
            resource_name = "things"
            queryset = Tag.objects.all()
            create_service = update_service = delete_service = staticmethod(lambda *, tag, **kwargs: None)
            audit_target = "tags"
            openapi_tag, noun = ("Things", "Things."), ("thing", "things")

    assert "things" not in resources()


def test_a_process_that_never_served_a_request_still_knows_the_resources(tmp_path):
    # given a fresh process (a Celery worker, a management command): no view module imported yet
    code = (
        "import django; django.setup()\n"
        "from helpdesk.api import resources\n"
        "assert not resources.REGISTRY, resources.REGISTRY\n"
        "print(sorted(resources.resources()))\n"
    )
    env = {**os.environ, "HELPDESK_VAR_DIR": str(tmp_path)}
    # when it asks which resources there are
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    # then it loads them (the webhook outbox asks this inside a worker's write)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(
        [
            "apps",
            "blockedEmails",
            "businessHours",
            "cannedResponses",
            "contactForms",
            "customFields",
            "emailDomains",
            "macros",
            "mailboxes",
            "replyAddresses",
            "rules",
            "slaPolicies",
            "tags",
            "trustedEmails",
            "views",
            "webhooks",
        ]
    )


class TestPagedTagResource(tag_tests.TestTagResource):
    """The generic tests of a resource whose list is paged, as the base gives new resources by default."""

    @pytest.fixture(autouse=True)
    def _paged(self, monkeypatch):
        monkeypatch.setattr(TagViewSet, "pagination_class", KeysetPagination)

    def test_the_list_is_paged_as_the_contract_says(self, owner):
        for name in ("a", "b", "c"):
            owner.client.post("/v1/tags", {"name": name}, format="json")
        page = owner.client.get("/v1/tags", {"pageSize": 2, "order": "asc"})
        assert [tag["name"] for tag in page.json()] == ["a", "b"]
        assert (page["X-Total-Results"], page["X-Total-Pages"]) == ("3", "2")
        assert 'rel="next"' in page["Link"]
        refused = owner.client.get("/v1/tags", {"pageSize": 0})
        assert refused.status_code == 400 and "pageSize" in refused.json()["details"]
        unknown = owner.client.get("/v1/tags", {"name": "a"})
        assert unknown.status_code == 400 and "name" in unknown.json()["details"]

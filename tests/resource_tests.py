"""The tests every resource of helpdesk.api.resources gets, as NetBox's `APIViewTestCases`: a test module declares
the resource and what the contract says of it, and a class deriving from `ResourceTests` runs the same tests on it.

    class TestTagResource(ResourceTests):
        resource = Resource(
            viewset=TagViewSet,
            make=lambda license: TagFactory(license=license, name="old").pk,
            create={"name": "vip"},
            update={"name": "VIP"},
            invalid=[({}, "name"), ({"name": "x" * 101}, "name")],
            readers={"owner", "normal", "viewer"},
            writers={"owner", "normal"},
            entity_name="vip",
            create_changes={"name": {"before": None, "after": "vip"}},
            update_changes={"name": {"before": "vip", "after": "VIP"}},
        )

What it asserts: a CRUD round trip (201, 200, 204, then 404), an outsider's 404 on the object and its absence
from their list, the role matrix (403 for the roles not declared, nothing changed), one audit entry per write with
the target, the object's name and the diff, one webhook delivery per write where the resource publishes, a 400 in
the contract's error shape naming the field for each invalid body (and for an unknown field), and 404 for an
unknown ID. The roles and payloads are the test's own declaration, not read from the viewset, so a viewset that
drifts from the contract fails.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable

import pytest

from audit.models import AuditEntry
from tests.audit_helpers import assert_api_author, entries_written

ROLES = ("owner", "normal", "viewer")
ERROR_KEYS = {"error", "code", "details"}


@dataclasses.dataclass
class Resource:
    viewset: type
    make: Callable  # (license) -> the primary key of a new object of that license
    create: dict  # a valid POST body
    invalid: list[tuple[dict, str]]  # POST bodies refused, with the field `details` must name
    readers: set[str]
    writers: set[str]
    entity_name: str  # the audit entry's name of the object `create` makes
    update: dict | None = None  # a valid PATCH body (None: the resource has no PATCH)
    create_changes: dict = dataclasses.field(default_factory=dict)  # part of the create entry's diff
    update_changes: dict = dataclasses.field(default_factory=dict)  # part of the update entry's diff
    publishes: bool = False  # webhook events <resource_name>.create|update|delete
    fixtures: tuple[str, ...] = ()  # further fixtures the writes need (e.g. a resolver)

    @property
    def path(self) -> str:
        return f"/v1/{self.viewset.resource_name}"

    @property
    def model(self):
        return self.viewset.queryset.model


def _error(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, (response.status_code, response.content)
    body = response.json()
    assert set(body) == ERROR_KEYS, body
    if code is not None:
        assert body["code"] == code, body
    return body


def _echoes(body: dict, sent: dict) -> None:
    """The fields of `sent` that the resource shows are shown as sent (write-only ones are not shown)."""
    shown = {key: value for key, value in sent.items() if key in body}
    assert shown == {key: body[key] for key in shown}, (sent, body)


def _items(response) -> list:
    assert response.status_code == 200, response.content
    return response.json()


class ResourceTests:
    resource: Resource

    @pytest.fixture(autouse=True)
    def _resource_fixtures(self, request):
        for name in self.resource.fixtures:
            request.getfixturevalue(name)

    @pytest.fixture
    def writer(self, personas):
        return personas[next(role for role in ROLES if role in self.resource.writers)]

    @pytest.fixture
    def reader(self, personas):
        return personas[next(role for role in ROLES if role in self.resource.readers)]

    def _detail(self, pk) -> str:
        return f"{self.resource.path}/{pk}"

    def _exists(self, pk) -> bool:
        return self.resource.model.objects.filter(pk=pk).exists()

    # --- CRUD -----------------------------------------------------------------------------------------------

    def test_it_creates_reads_lists_updates_and_deletes(self, writer, reader):
        resource = self.resource
        # when a writer creates one
        created = writer.client.post(resource.path, resource.create, format="json")
        # then it is answered, and readable as answered (the answer may hold more: a secret shown once)
        assert created.status_code == 201, created.content
        body = created.json()
        assert body["licenseID"] == writer.license.pk
        _echoes(body, resource.create)
        detail = reader.client.get(self._detail(body["ID"]))
        assert detail.status_code == 200, detail.content
        assert detail.json().items() <= body.items()
        listed = reader.client.get(resource.path)
        assert [item for item in _items(listed) if item["ID"] == body["ID"]] == [detail.json()]
        if resource.viewset.pagination_class is not None:
            assert listed["X-Total-Results"] == "1"
        if resource.update is not None:
            # when it is updated
            updated = writer.client.patch(self._detail(body["ID"]), resource.update, format="json")
            assert updated.status_code == 200, updated.content
            _echoes(updated.json(), resource.update)
            assert reader.client.get(self._detail(body["ID"])).json() == updated.json()
        # when it is deleted, it is gone
        deleted = writer.client.delete(self._detail(body["ID"]))
        assert deleted.status_code == 204 and deleted.content == b""
        _error(reader.client.get(self._detail(body["ID"])), 404, "not_found")
        assert not self._exists(body["ID"])

    # --- tenancy --------------------------------------------------------------------------------------------

    def test_an_outsider_gets_404_and_sees_nothing(self, license, outsider):
        pk = self.resource.make(license)
        _error(outsider.client.get(self._detail(pk)), 404, "not_found")
        if self.resource.update is not None:
            _error(
                outsider.client.patch(self._detail(pk), self.resource.update, format="json"), 404, "not_found"
            )
        _error(outsider.client.delete(self._detail(pk)), 404, "not_found")
        assert str(pk) not in [item["ID"] for item in _items(outsider.client.get(self.resource.path))]
        assert self._exists(pk)

    def test_an_unknown_id_is_404(self, owner):
        unknown = self._detail(uuid.uuid4())
        _error(owner.client.get(unknown), 404 if "owner" in self.resource.readers else 403)
        _error(owner.client.get(self._detail("not-an-id")), 404 if "owner" in self.resource.readers else 403)
        if "owner" in self.resource.writers:
            _error(owner.client.delete(unknown), 404, "not_found")
            if self.resource.update is not None:
                _error(owner.client.patch(unknown, self.resource.update, format="json"), 404, "not_found")

    # --- roles ----------------------------------------------------------------------------------------------

    @pytest.mark.parametrize("role", ROLES)
    def test_roles_read_and_write_as_declared(self, role, personas, license):
        resource, persona = self.resource, personas[role]
        pk = resource.make(license)
        reads, writes = role in resource.readers, role in resource.writers
        for response in (persona.client.get(resource.path), persona.client.get(self._detail(pk))):
            if reads:
                assert response.status_code == 200, response.content
            else:
                _error(response, 403, "permission_denied")
        writes_made = []
        if resource.update is not None:
            writes_made.append((persona.client.patch(self._detail(pk), resource.update, format="json"), 200))
        writes_made.append((persona.client.delete(self._detail(pk)), 204))
        count = resource.model.objects.count()
        writes_made.append((persona.client.post(resource.path, resource.create, format="json"), 201))
        for response, status in writes_made:
            if writes:
                assert response.status_code == status, response.content
            else:
                _error(response, 403, "permission_denied")
        # a refused write changed nothing
        assert self._exists(pk) is not writes
        assert resource.model.objects.count() == count + (1 if writes else 0)

    # --- audit ----------------------------------------------------------------------------------------------

    def test_every_write_is_one_audit_entry(self, writer):
        resource, target = self.resource, self.resource.viewset.audit_target
        with entries_written() as written:
            pk = writer.client.post(resource.path, resource.create, format="json").json()["ID"]
        entry = written.one()
        assert (entry.action, entry.target, entry.object_id, entry.entity_name) == (
            "create",
            target,
            pk,
            resource.entity_name,
        )
        assert_api_author(entry, writer)
        assert {key: entry.changes.get(key) for key in resource.create_changes} == resource.create_changes
        if resource.update is not None:
            with entries_written() as written:
                writer.client.patch(self._detail(pk), resource.update, format="json")
            entry = written.one()
            assert (entry.action, entry.target, entry.object_id) == ("update", target, pk)
            assert {key: entry.changes.get(key) for key in resource.update_changes} == resource.update_changes
        with entries_written() as written:
            writer.client.delete(self._detail(pk))
        entry = written.one()
        assert (entry.action, entry.target, entry.object_id) == ("delete", target, pk)
        assert AuditEntry.objects.filter(object_id=pk).count() == (3 if resource.update is not None else 2)

    # --- webhooks -------------------------------------------------------------------------------------------

    def test_each_write_publishes_one_webhook_event_if_the_resource_publishes(self, writer):
        resource = self.resource
        assert resource.viewset.webhook_events is resource.publishes
        if not resource.publishes:
            return
        assert_publishes(resource, writer)

    # --- bad input ------------------------------------------------------------------------------------------

    def test_bad_input_is_a_400_naming_the_field(self, writer, invalid):
        body, field, method = invalid
        resource = self.resource
        path = resource.path if method == "post" else self._detail(resource.make(writer.license))
        count = resource.model.objects.count()
        response = getattr(writer.client, method)(path, body, format="json")
        details = _error(response, 400)["details"]
        assert field in details, details
        assert resource.model.objects.count() == count

    def pytest_generate_tests(self, metafunc):
        if "invalid" in metafunc.fixturenames:
            resource = metafunc.cls.resource
            cases = [(body, field, "post") for body, field in resource.invalid]
            cases.append(({**resource.create, "unknownField": 1}, "unknownField", "post"))
            if resource.update is not None:
                cases.append(({"unknownField": 1}, "unknownField", "patch"))
            metafunc.parametrize("invalid", cases, ids=[f"{method} {field}" for _, field, method in cases])


def assert_publishes(resource: Resource, writer) -> None:
    """One delivery per write to a webhook subscribed to `<resource_name>.<action>`, carrying the object."""
    from tickets.webhooks.models import Webhook, WebhookDelivery

    name = resource.viewset.resource_name
    for action in ("create", "update", "delete"):
        Webhook.objects.create(
            license=writer.license,
            name=action,
            url="https://hooks.example.com/",
            event_type=f"{name}.{action}",
            secret="s" * 20,
        )
    pk = writer.client.post(resource.path, resource.create, format="json").json()["ID"]
    if resource.update is not None:
        writer.client.patch(f"{resource.path}/{pk}", resource.update, format="json")
    writer.client.delete(f"{resource.path}/{pk}")
    deliveries = WebhookDelivery.objects.filter(license=writer.license).order_by("created_at", "id")
    expected = ["create", "update", "delete"] if resource.update is not None else ["create", "delete"]
    assert [delivery.event_type for delivery in deliveries] == [f"{name}.{action}" for action in expected]
    for delivery in deliveries:
        assert json.loads(delivery.body)["payload"]["ID"] == pk

"""Tags: license-scoped CRUD, unique names, roles."""

from tests.factories import TagFactory
from tests.resource_tests import Resource, ResourceTests
from tickets.api.views import TagViewSet


def test_it_creates_lists_renames_and_deletes_tags(owner):
    # when
    created = owner.client.post("/v1/tags", {"name": "vip"}, format="json")
    tag_id = created.json()["ID"]
    renamed = owner.client.patch(f"/v1/tags/{tag_id}", {"name": "VIP customer"}, format="json")
    listed = owner.client.get("/v1/tags")
    deleted = owner.client.delete(f"/v1/tags/{tag_id}")
    # then
    assert created.status_code == 201
    assert list(created.json()) == [
        "ID",
        "licenseID",
        "name",
        "createdAt",
        "createdBy",
        "createdByType",
        "updatedAt",
        "updatedBy",
    ]
    assert renamed.json()["name"] == "VIP customer"
    assert [t["name"] for t in listed.json()] == ["VIP customer"]
    assert deleted.status_code == 204
    assert owner.client.get("/v1/tags").json() == []


def test_names_are_unique_per_license_case_insensitively(owner, outsider):
    TagFactory(license=owner.license, name="Billing")
    assert owner.client.post("/v1/tags", {"name": "billing"}, format="json").status_code == 400
    assert outsider.client.post("/v1/tags", {"name": "billing"}, format="json").status_code == 201


def test_a_viewer_reads_but_cannot_write(viewer, agent):
    TagFactory(license=viewer.license, name="x")
    assert viewer.client.get("/v1/tags").status_code == 200
    assert viewer.client.post("/v1/tags", {"name": "y"}, format="json").status_code == 403
    assert agent.client.post("/v1/tags", {"name": "y"}, format="json").status_code == 201


def test_an_outsider_sees_no_tags(owner, outsider):
    TagFactory(license=owner.license)
    assert outsider.client.get("/v1/tags").json() == []


def test_tag_writes_through_the_api_are_audited(owner):
    from tests.audit_helpers import assert_api_author, entries_written

    # create
    with entries_written() as written:
        tag_id = owner.client.post("/v1/tags", {"name": "vip"}, format="json").json()["ID"]
    entry = written.one()
    assert (entry.action, entry.target, entry.object_id, entry.entity_name) == (
        "create",
        "tags",
        tag_id,
        "vip",
    )
    assert_api_author(entry, owner)
    # update
    with entries_written() as written:
        owner.client.patch(f"/v1/tags/{tag_id}", {"name": "VIP"}, format="json")
    assert written.one().changes["name"] == {"before": "vip", "after": "VIP"}
    # delete
    with entries_written() as written:
        owner.client.delete(f"/v1/tags/{tag_id}")
    assert (written.one().action, written.one().target) == ("delete", "tags")


class TestTagResource(ResourceTests):
    resource = Resource(
        viewset=TagViewSet,
        make=lambda license: TagFactory(license=license).pk,
        create={"name": "vip"},
        update={"name": "VIP customer"},
        invalid=[({}, "name"), ({"name": ""}, "name"), ({"name": "x" * 101}, "name"), ({"name": 5}, "name")],
        readers={"owner", "normal", "viewer"},
        writers={"owner", "normal"},
        entity_name="vip",
        create_changes={"name": {"before": None, "after": "vip"}},
        update_changes={"name": {"before": "vip", "after": "VIP customer"}},
    )

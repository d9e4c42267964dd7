"""helpdesk.api.serializers.LeafFieldsCopied: a serializer's leaf fields copied shallowly give what DRF's deep copy
gives, leave the declared fields as they were, and lean on DRF only as far as a test here notices."""

import inspect
from types import SimpleNamespace

from rest_framework import serializers

from helpdesk.api.serializers import _leaf
from tests.factories import AgentFactory, TagFactory, TeamFactory
from tickets.api.serializers import TicketCreateSerializer


def test_drf_still_deep_copies_the_declared_fields_as_replaced():
    """What LeafFieldsCopied.get_fields replaces, and how DRF copies a field (a change here: look again)."""
    assert "copy.deepcopy(self._declared_fields)" in inspect.getsource(serializers.Serializer.get_fields)
    deepcopy = inspect.getsource(serializers.Field.__deepcopy__)
    assert (
        "self._args" in deepcopy
        and "self._kwargs" in deepcopy
        and "self.__class__(*args, **kwargs)" in deepcopy
    )


def _body(license):
    team, tag, agent = (
        TeamFactory(license=license),
        TagFactory(license=license),
        AgentFactory(license=license),
    )
    return {
        "subject": "Lost parcel",
        "status": "pending",
        "priority": 10,
        "teamIDs": [str(team.pk)],
        "tagIDs": [str(tag.pk)],
        "followers": [str(agent.pk)],
        "assignment": {"team": {"ID": str(team.pk)}, "agent": None},
        "customFields": {},
        "requester": {"email": "jane@customer.example", "name": "Jane"},
        "message": {"text": "Hello", "isPrivate": False},
        "peopleInTheLoop": [{"email": "joe@customer.example"}],
        "author": {"type": "agent"},
    }


def _state(fields):
    return {name: dict(vars(field)) for name, field in fields.items()}


def test_leaf_fields_copied_validate_as_drfs_deep_copies(license):
    # given
    body, context = _body(license), {"request": SimpleNamespace(license=license)}
    declared = TicketCreateSerializer._declared_fields
    before = _state(declared)

    class DeepCopied(TicketCreateSerializer):
        get_fields = serializers.Serializer.get_fields

    # when: two requests' serializers, and DRF's own way
    first, second = (TicketCreateSerializer(data=body, context=context) for _ in range(2))
    drf = DeepCopied(data=body, context=context)
    assert first.is_valid() and second.is_valid() and drf.is_valid(), (first.errors, drf.errors)
    # then: the same data; each instance's own fields, bound to it; the declared fields untouched
    assert first.validated_data == second.validated_data == drf.validated_data
    assert {name for name, field in declared.items() if _leaf(field)} >= {"subject", "status", "teamIDs"}
    for name, field in first.fields.items():
        assert field is not declared[name] and field is not second.fields[name]
        assert field.parent is first and field.field_name == name
    assert _state(declared) == before


def test_a_refused_value_names_the_field_as_drf_does(license):
    context = {"request": SimpleNamespace(license=license)}
    body = {"subject": "", "status": "nope", "priority": 3, "requester": {"email": "x"}, "message": {}}
    ours = TicketCreateSerializer(data=body, context=context)

    class DeepCopied(TicketCreateSerializer):
        get_fields = serializers.Serializer.get_fields

    drf = DeepCopied(data=body, context=context)
    assert not ours.is_valid() and not drf.is_valid()
    assert ours.errors == drf.errors and set(ours.errors) == {
        "subject",
        "status",
        "priority",
        "requester",
        "message",
    }

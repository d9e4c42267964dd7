"""A license's CRUD resource as declarations: one base viewset gives it tenancy, roles, the writes through its
services, the error shape, its webhook events and its OpenAPI operations.

    class TagViewSet(ResourceViewSet):
        resource_name = "tags"                      # /v1/tags: the route's prefix, the webhook events' prefix
        queryset = Tag.objects.order_by("name", "id")
        serializer_class = TagSerializer            # the output: GET, and the answers of POST and PATCH
        write_serializer_class = TagWriteSerializer # the input: POST, and PATCH (partially)
        create_service = services.tag_create        # (*, license, **body)  -> the object
        update_service = services.tag_update        # (*, tag, **body)      -> the object
        delete_service = services.tag_delete        # (*, tag)
        writers = WRITERS                           # readers: everyone; writers: owners (the defaults)
        lookup_url_kwarg = "tagID"
        audit_target = "tags"                       # registered with audit.registry at ready() (a test checks)
        openapi_tag = ("Tags", "Labels put on tickets.")
        noun = ("tag", "tags")

- Tenancy: `LicenseScopedViewSet` (every query `for_license(request.license)`, another license's object a 404).
- Roles: `readers` may list and get (and call the resource's other safe actions), `writers` everything else;
  `roles = {action: ...}` still wins for one action (helpdesk.api.permissions.RolePermission).
- Writes: the body is validated by the declared serializer (unknown fields are a 400 naming them), then handed
  to the service as keyword arguments: `create_service(license=..., **body)`; `update_service` and
  `delete_service` receive the object under the name of their first keyword-only parameter (`tag=`).
  Services refuse with helpdesk.errors, which the one exception handler turns into the contract's error shape.
  `perform_create(data)`, `perform_update(instance, data)` and `perform_destroy(instance)` are the hooks for a
  resource whose service takes more (the caller's account) or returns more (a secret shown once).
- Lists: the contract's pagination (`KeysetPagination`, `sort_fields`) unless `pagination_class = None`.
- Audit: nothing to do here; the audit's signal receivers record every write of a model registered in
  audit.registry from its app's ready(). `audit_target` says which target it is, so that a test refuses a resource that is not.
- Webhooks: `webhook_events = True` publishes `<resource_name>.create|update|delete` with the output
  serializer's document (tickets/webhooks/outbox.py reads `published()`).
- OpenAPI: the request and response bodies of POST and PATCH come from the serializers above (HelpdeskAutoSchema),
  the tag and the summaries from `openapi_tag` and `noun` (helpdesk/api/schema.py), and `descriptions` gives an
  action a description of its own (`{"create": "..."}`, indentation stripped as a docstring's).

A resource without some writes composes the mixins: `class X(CreateMixin, DestroyMixin, ReadOnlyResourceViewSet)`
(no PATCH route then; the router maps only the actions a viewset has).
"""

from __future__ import annotations

import inspect

from django.core.exceptions import ImproperlyConfigured
from django.urls import get_resolver
from rest_framework import mixins, status
from rest_framework.response import Response

from helpdesk.api.pagination import KeysetPagination
from helpdesk.api.permissions import EVERYONE, OWNERS
from helpdesk.api.tenancy import LicenseScopedViewSet

# resource_name -> viewset, filled as resource viewsets are defined (their modules load with the URLconf).
REGISTRY: dict[str, type[ReadOnlyResourceViewSet]] = {}


def resources() -> dict[str, type[ReadOnlyResourceViewSet]]:
    """Every resource viewset of the API, its URLconf loaded first (a worker that never served a request has
    not imported the views yet; the first call costs ~0.2 s, once per process)."""
    get_resolver().url_patterns  # noqa: B018  (imports every view module)
    return REGISTRY


def published() -> dict:
    """{model: (event prefix, output serializer)} of the resources that publish webhook events."""
    return {
        viewset.queryset.model: (name, viewset.serializer_class)
        for name, viewset in resources().items()
        if viewset.webhook_events
    }


def published_event_types() -> list[str]:
    """`<resource_name>.create|update|delete` of every resource that publishes, by name (what a webhook may
    subscribe to besides the contract's own types)."""
    names = sorted(name for name, _serializer in published().values())
    return [f"{name}.{action}" for name in names for action in ("create", "update", "delete")]


def _object_parameter(viewset, attribute: str) -> str:
    """The name under which `attribute`'s service takes the object: its first keyword-only parameter."""
    service = getattr(viewset, attribute)
    for parameter in inspect.signature(service).parameters.values():
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            return parameter.name
    raise ImproperlyConfigured(
        f"{viewset.__name__}.{attribute} takes no keyword-only argument for the object"
    )


class ReadOnlyResourceViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, LicenseScopedViewSet):
    # No docstring here or on the actions: drf-spectacular would make it every resource's description.
    resource_name: str = ""
    readers = EVERYONE
    writers = OWNERS
    pagination_class = KeysetPagination
    write_serializer_class = None
    create_serializer_class = None  # default: write_serializer_class
    created_serializer_class = None  # default: serializer_class
    audit_target: str = ""
    webhook_events = False
    openapi_tag: tuple[str, str] = ("", "")  # (title, description)
    noun: tuple[str, str] = ("", "")  # (singular, plural) as a reader says them
    descriptions: dict[str, str] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for attribute in ("create_service", "update_service", "delete_service"):
            service = cls.__dict__.get(attribute)
            if inspect.isfunction(service):  # called as a function, never bound to the view
                setattr(cls, attribute, staticmethod(service))
        if cls.queryset is None:  # an abstract base
            return
        missing = [
            attribute
            for action, attribute in (
                ("create", "create_service"),
                ("partial_update", "update_service"),
                ("partial_update", "write_serializer_class"),
                ("destroy", "delete_service"),
            )
            if hasattr(cls, action) and getattr(cls, attribute, None) is None
        ]
        if hasattr(cls, "create") and not (cls.create_serializer_class or cls.write_serializer_class):
            missing.append("write_serializer_class")
        if missing or not (cls.resource_name and cls.audit_target and all(cls.openapi_tag) and all(cls.noun)):
            raise ImproperlyConfigured(
                f"{cls.__name__} must declare resource_name, audit_target, openapi_tag, noun"
                f"{' and ' + ', '.join(missing) if missing else ''}"
            )
        if hasattr(cls, "partial_update"):
            cls._update_object = _object_parameter(cls, "update_service")
        if hasattr(cls, "destroy"):
            cls._delete_object = _object_parameter(cls, "delete_service")
        REGISTRY[cls.resource_name] = cls

    # --- the serializers of the writes (also what the OpenAPI document says they take and answer) ----------

    def get_input_serializer_class(self):
        if self.action == "create":
            return self.create_serializer_class or self.write_serializer_class
        return self.write_serializer_class

    def get_output_serializer_class(self):
        if self.action == "create":
            return self.created_serializer_class or self.serializer_class
        return self.serializer_class

    def validated(self, *, partial: bool = False) -> dict:
        serializer = self.get_input_serializer_class()(
            data=self.request.data, partial=partial, context=self.get_serializer_context()
        )
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def output(self, instance) -> dict:
        return self.get_output_serializer_class()(instance, context=self.get_serializer_context()).data


class CreateMixin:
    create_service = None

    def create(self, request, *args, **kwargs):
        instance = self.perform_create(self.validated())
        return Response(self.output(instance), status=status.HTTP_201_CREATED)

    def perform_create(self, data):
        return self.create_service(license=self.request.license, **data)


class UpdateMixin:
    update_service = None

    def partial_update(self, request, *args, **kwargs):
        instance = self.get_object()
        instance = self.perform_update(instance, self.validated(partial=True))
        return Response(self.output(instance))

    def perform_update(self, instance, data):
        return self.update_service(**{self._update_object: instance}, **data)


class DestroyMixin:
    delete_service = None

    def destroy(self, request, *args, **kwargs):
        self.perform_destroy(self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    def perform_destroy(self, instance):
        self.delete_service(**{self._delete_object: instance})


class ResourceViewSet(CreateMixin, UpdateMixin, DestroyMixin, ReadOnlyResourceViewSet):
    pass

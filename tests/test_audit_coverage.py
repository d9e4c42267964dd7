"""Every API write route is either covered by an audit test or listed with the reason it writes no entry.

A new write route (another app's viewset) fails this test until it is added below: register its model from its
app's AppConfig.ready() (audit.registry.register) and add a test asserting its one entry, or say why it changes
nothing audited. The writes of a resource viewset (helpdesk.api.resources) are covered by its generic tests
(tests/resource_tests.py: `test_every_write_is_one_audit_entry`), once its model is registered under its declared
`audit_target`.
"""

import re

from audit.registry import REGISTRY
from helpdesk.api.resources import ReadOnlyResourceViewSet, resources
from tests.test_tenancy import _api_patterns

WRITE_METHODS = {"post", "put", "patch", "delete"}

# (route, method) -> the test that asserts its entry, or "not audited: <reason>".
COVERED = {
    ("v1/agents", "post"): "test_audit_api_writes.test_it_audits_an_agent_created_through_the_api",
    ("v1/agents", "patch"): "test_audit_api_writes.test_a_bulk_update_of_five_agents_is_five_entries",
    (
        "v1/agents/<pk>",
        "patch",
    ): "test_audit_api_writes.test_a_patch_of_fields_and_memberships_is_one_update_entry",
    ("v1/agents/<pk>", "delete"): "test_audit_api_writes.test_it_audits_an_agent_deleted_through_the_api",
    (
        "v1/teams",
        "post",
    ): "test_audit_api_writes.test_it_audits_team_creation_update_bulk_update_and_deletion_through_the_api",
    (
        "v1/teams",
        "patch",
    ): "test_audit_api_writes.test_it_audits_team_creation_update_bulk_update_and_deletion_through_the_api",
    (
        "v1/teams/<pk>",
        "patch",
    ): "test_audit_api_writes.test_it_audits_team_creation_update_bulk_update_and_deletion_through_the_api",
    (
        "v1/teams/<pk>",
        "delete",
    ): "test_audit_api_writes.test_it_audits_team_creation_update_bulk_update_and_deletion_through_the_api",
    ("v1/licenses/<pk>", "patch"): "test_audit_api_writes.test_it_audits_a_license_update_through_the_api",
    ("v1/licenses", "post"): "test_audit_api_writes.test_it_audits_a_license_created_through_the_api",
    (
        "v1/templates",
        "post",
    ): "test_audit_api_writes.test_template_writes_through_the_api_are_audited_as_email_templates",
    (
        "v1/templates/<pk>",
        "patch",
    ): "test_audit_api_writes.test_template_writes_through_the_api_are_audited_as_email_templates",
    (
        "v1/templates/<pk>",
        "delete",
    ): "test_audit_api_writes.test_template_writes_through_the_api_are_audited_as_email_templates",
    (
        "v1/agents/<pk>/invite",
        "post",
    ): "not audited: a new invitation link and e-mail; the agent does not change",
    ("v1/licenses/<pk>/forwardingInstructions", "post"): "not audited: sends an e-mail, changes nothing",
    ("v1/templates/preview", "post"): "not audited: renders, writes nothing",
    ("v1/rules/<pk>/test", "post"): "not audited: evaluates a rule on a ticket, writes nothing",
    ("v1/templates/sendTestMessage", "post"): "not audited: queues a test e-mail, changes no template",
    (
        "v1/subscriptions",
        "post",
    ): "test_audit_api_writes.test_a_charged_subscription_create_is_one_entry_with_the_trial_it_replaces",
    (
        "v1/subscriptions/<pk>",
        "patch",
    ): "test_audit_api_writes.test_subscription_update_cancel_and_reactivate_are_one_entry_each",
    (
        "v1/subscriptions/<pk>/cancel",
        "post",
    ): "test_audit_api_writes.test_subscription_update_cancel_and_reactivate_are_one_entry_each",
    (
        "v1/subscriptions/<pk>/reactivate",
        "post",
    ): "test_audit_api_writes.test_subscription_update_cancel_and_reactivate_are_one_entry_each",
    (
        "v1/webhooks/<pk>/deliveries/<pk>/redeliver",
        "post",
    ): "not audited: a delivery row (outbox), no change of data",
    ("v1/apps/grants/<pk>", "delete"): "not audited: grants are credentials, as personal access tokens",
    ("v1/tickets", "post"): "not audited: tickets are not one of the spec's audit targets",
    ("v1/tickets/<pk>", "patch"): "not audited: tickets are not one of the spec's audit targets",
    (
        "v1/tickets/<pk>",
        "delete",
    ): "not audited: tickets are not one of the spec's audit targets (moves to trash)",
    ("v1/tickets/<pk>/childTickets", "post"): "not audited: tickets are not one of the spec's audit targets",
    # the ticket sub-resources: their history is the ticket's events (tests/test_ticket_sub_resources.py)
    **{
        route: "not audited: tickets are not one of the spec's audit targets"
        for route in (
            ("v1/tickets/<pk>/childTickets/<pk>", "delete"),
            ("v1/tickets/<pk>/followers", "post"),
            ("v1/tickets/<pk>/followers", "delete"),
            ("v1/tickets/<pk>/tags", "post"),
            ("v1/tickets/<pk>/tags", "delete"),
            ("v1/tickets/<pk>/silo", "put"),
            ("v1/tickets/<pk>/ratingRequests", "post"),
        )
    },
    ("v1/transactions", "post"): "not audited: an upload session, not one of the spec's audit targets",
    (
        "v1/transactions/<pk>/attachments",
        "post",
    ): "not audited: stores files; not one of the spec's audit targets",
    ("v1/cannedResponses/<pk>/render", "post"): "not audited: renders, writes nothing",
    ("v1/emailDomains/<pk>/verify", "post"): "test_email_domains.test_a_verification_is_one_audit_entry",
    ("v1/tickets/<pk>/macros/<pk>", "post"): (
        "not audited: tickets are not one of the spec's audit targets (one write: test_macros.py)"
    ),
    ("v1/invitations/accept", "post"): (
        "test_audit_api_writes.test_accepting_an_invitation_is_one_agent_update_with_the_invitees_ip_and_user_agent"
    ),
}


def _normalise(route: str) -> str:
    route = re.sub(r"\(\?P<\w+>[^)]*\)", "<pk>", route)
    return route.replace("^", "").replace("$", "").replace("\\", "")


RESOURCE_WRITES = {"create", "partial_update", "destroy"}


def _write_routes():
    """(route, method) of every API write: viewset actions and plain API views alike; the base writes of
    resource viewsets left out (their generic tests cover them)."""
    for route, pattern in _api_patterns():
        cls = getattr(pattern.callback, "cls", None)
        if cls is None:
            continue
        actions = getattr(pattern.callback, "actions", None)
        methods = actions if actions else [m for m in WRITE_METHODS if hasattr(cls, m)]
        for method in methods:
            if method not in WRITE_METHODS:
                continue
            if issubclass(cls, ReadOnlyResourceViewSet) and actions[method] in RESOURCE_WRITES:
                continue
            yield _normalise(route), method


def test_every_api_write_route_is_covered_by_an_audit_test():
    missing = sorted(set(_write_routes()) - set(COVERED))
    assert not missing, f"write routes without an audit test or a reason: {missing}"


def test_every_resource_is_audited_under_its_declared_target():
    for name, viewset in resources().items():
        audited = REGISTRY.get(viewset.queryset.model)
        assert audited is not None, (
            f"register {viewset.queryset.model.__name__} with audit.registry from its app's ready()"
        )
        assert audited.target == viewset.audit_target, name


def test_every_listed_test_exists():
    import importlib

    for reason in COVERED.values():
        if reason.startswith("not audited:"):
            continue
        module, name = reason.split(".")
        assert hasattr(importlib.import_module(f"tests.{module}"), name), reason

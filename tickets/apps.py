from django.apps import AppConfig


class TicketsConfig(AppConfig):
    name = "tickets"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Tickets react to the changes of the apps below them (accounts, audit) through their signals.
        from accounts.signals import agent_leaving
        from audit.capture import changes_recorded
        from tickets.autoassign import on_agent_leaving
        from tickets.reports import wiring as reports
        from tickets.signals import events_recorded
        from tickets.totals import wiring
        from tickets.webhooks import outbox

        _connect_sla()  # before the outbox: the webhooks' ticket documents carry the clocks this write set
        events_recorded.connect(outbox.on_events_recorded, dispatch_uid="tickets.webhooks.events")
        _webhooks_versioned()
        _connect_rules()
        events_recorded.connect(reports.on_events_recorded, dispatch_uid="tickets.reports.metrics")
        changes_recorded.connect(outbox.on_changes_recorded, dispatch_uid="tickets.webhooks.changes")
        agent_leaving.connect(on_agent_leaving, dispatch_uid="tickets.autoassign.agent_leaving")
        wiring.connect()  # the totals see every change of tickets (before the lock below)
        _lock_before_cascades()
        _rollups_follow_deletions()
        _register_parts()


def _webhooks_versioned():
    """Each process's copy of a license's webhooks is dropped by any save or delete of one."""
    from django.db.models.signals import post_delete, post_save

    from tickets.webhooks import outbox
    from tickets.webhooks.models import Webhook

    post_save.connect(outbox.webhooks_changed, sender=Webhook, dispatch_uid="tickets.webhooks.version.save")
    post_delete.connect(outbox.webhooks_changed, sender=Webhook, dispatch_uid="tickets.webhooks.version.del")


def _connect_rules():
    """Rules run in the transaction of every ticket write (its recorded events); their firing rows go with a
    purged ticket."""
    from django.db.models.signals import post_delete, post_save

    from tickets.rules import engine, purge
    from tickets.rules.models import Rule
    from tickets.signals import events_recorded, tickets_purging

    events_recorded.connect(engine.on_events_recorded, dispatch_uid="tickets.rules.events")
    post_save.connect(engine.on_rule_saved, sender=Rule, dispatch_uid="tickets.rules.version.save")
    post_delete.connect(engine.on_rule_saved, sender=Rule, dispatch_uid="tickets.rules.version.delete")
    tickets_purging.connect(purge.on_tickets_purging, dispatch_uid="tickets.rules.purge")


def _connect_sla():
    """SLA clocks move in the transaction of every ticket write that records events (tickets.sla.apply)."""
    from django.db.models.signals import post_delete, post_save

    from tickets.signals import events_recorded
    from tickets.sla import apply
    from tickets.sla.models import BusinessHours, SlaPolicy

    events_recorded.connect(apply.on_events_recorded, dispatch_uid="tickets.sla.events")
    for model in (SlaPolicy, BusinessHours):  # each process's copy of a license's policies is dropped
        post_save.connect(
            apply.policies_changed, sender=model, dispatch_uid=f"tickets.sla.version.save.{model}"
        )
        post_delete.connect(
            apply.policies_changed, sender=model, dispatch_uid=f"tickets.sla.version.del.{model}"
        )


def _register_parts():
    """What tickets adds to the machinery below it: its audited models (after the totals' receivers: a tag's
    deletion locks its tickets before audit locks the tag), the resources its webhooks announce, its query
    parameters' OpenAPI schemas."""
    from accounts.api.serializers import AgentSerializer, TeamSerializer
    from accounts.models import Agent, Team
    from audit.registry import register
    from helpdesk.api.schema import register_parameters
    from tickets.api.schema import parameter_schemas
    from tickets.canned_responses.models import CannedResponse
    from tickets.custom_fields.models import CustomField
    from tickets.macros.models import Macro
    from tickets.models import Tag
    from tickets.rules.models import Rule
    from tickets.saved_views.models import View
    from tickets.sla.models import BusinessHours, SlaPolicy
    from tickets.webhooks import outbox
    from tickets.webhooks.models import Webhook

    register(Tag, target="tags")
    register(CannedResponse, target="cannedResponses", m2m={"attachments": "attachments"})
    register(Macro, target="macros")
    register(Rule, target="rules", exclude=("use_counter", "is_time_rule", "swept_until"))
    # The secret is recorded only as changed; `status` (failing/active) is the deliveries' outcome, not a change.
    register(Webhook, target="webhooks", secrets=("secret",), exclude=("status",))
    register(View, target="views")
    register(BusinessHours, target="businessHours")
    register(SlaPolicy, target="slaPolicies")
    register(CustomField, target="customFields", m2m={"teams": "teamIDs"})
    outbox.register_resource(Agent, prefix="agents", serializer=AgentSerializer)
    outbox.register_resource(Team, prefix="teams", serializer=TeamSerializer)
    register_parameters(parameter_schemas)


def _rollups_follow_deletions():
    """A deleted agent or team leaves its tickets unassigned (SET_NULL, no event): the reports' rollups of the
    current assignee follow (tickets.reports.rollups.unassign)."""
    from django.db.models.signals import pre_delete

    from accounts.models import Agent, Team
    from tickets.reports import rollups

    def agent_deleted(sender, instance, **kwargs):
        rollups.unassign(instance.license_id, "a", instance.pk)

    def team_deleted(sender, instance, **kwargs):
        rollups.unassign(instance.license_id, "t", instance.pk)

    pre_delete.connect(agent_deleted, sender=Agent, weak=False, dispatch_uid="tickets.reports.agent_deleted")
    pre_delete.connect(team_deleted, sender=Team, weak=False, dispatch_uid="tickets.reports.team_deleted")


def _lock_before_cascades():
    """A team's, an agent's or a tag's deletion locks the tickets its cascade reaches first (tickets.locks)."""
    from django.db.models.signals import pre_delete

    from accounts.models import Agent, Team
    from tickets import locks
    from tickets.models import Tag

    def cascade_coming(sender, instance, **kwargs):
        locks.lock_reached_tickets(instance)

    for model in (Agent, Team, Tag):
        pre_delete.connect(cascade_coming, sender=model, weak=False, dispatch_uid=f"tickets.locks.{model}")

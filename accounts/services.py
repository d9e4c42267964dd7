"""Writes of the accounts domain. Every write goes through here: the API, the admin and the commands.

Invariants kept here (and nowhere else): exactly one default team per license; at least one active owner;
related IDs belong to the same license; tokens are stored only as hashes.
"""

from __future__ import annotations

import dataclasses
import secrets
import uuid

from django.conf import settings
from django.utils import timezone

from accounts.actors import actor_id_in
from accounts.models import (
    ROLE_OWNER,
    STATUS_ACTIVE,
    STATUS_INVITED,
    Account,
    Agent,
    AttachmentTransaction,
    License,
    PersonalAccessToken,
    Team,
    default_license_settings,
    default_license_source,
)
from accounts.signals import (
    agent_activating,
    agent_invited,
    agent_leaving,
    license_created,
    team_reply_address_chosen,
)
from accounts.tokens import MIN_SCOPE, hash_token
from helpdesk.context import acting_as, current_actor
from helpdesk.errors import Conflict, field_error
from helpdesk.transactions import unit_of_work

DEFAULT_TOKEN_SCOPES = [MIN_SCOPE, "accounts--all:rw"]
DEFAULT_TEAM_NAME = "General"


# --- stamps -------------------------------------------------------------------------------------------


def _stamp_id(obj):
    """The actor's ID in the object's license (accounts.actors): an agent ID, or SYSTEM_ACTOR_ID, never empty.
    The license keeps it as text (its column predates the rule), with the same value."""
    if isinstance(obj, License):
        return str(actor_id_in(obj.pk))
    return actor_id_in(obj.license_id)


def stamp_create(obj) -> None:
    actor = current_actor()
    now = timezone.now()
    obj.created_at = obj.updated_at = now
    obj.created_by_type = actor.created_by_type
    obj.created_by = obj.updated_by = _stamp_id(obj)


def stamp_update(obj) -> None:
    obj.updated_at = timezone.now()
    obj.updated_by = _stamp_id(obj)


# --- accounts and tokens ------------------------------------------------------------------------------


def account_get_or_create(*, email: str, name: str = "") -> Account:
    email = email.strip().lower()
    account = Account.objects.filter(email__iexact=email).first()
    if account is None:
        account = Account.objects.create_user(email=email, name=name)
    return account


def token_issue(
    *, account: Account, name: str = "", scopes: list[str] | None = None
) -> tuple[PersonalAccessToken, str]:
    """Create a token; the plaintext is returned once and never stored."""
    plaintext = settings.HELPDESK_TOKEN_PREFIX + secrets.token_urlsafe(30)  # 240 bits
    token = PersonalAccessToken.objects.create(
        account=account,
        name=name,
        hint=plaintext[:8],
        token_hash=hash_token(plaintext),
        scopes=list(scopes or DEFAULT_TOKEN_SCOPES),
    )
    return token, plaintext


def token_revoke(*, token: PersonalAccessToken) -> PersonalAccessToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


@unit_of_work
def transaction_bind(*, license: License, transaction_id, bound_type: str, bound_id) -> AttachmentTransaction:
    """Bind an attachment transaction to the object whose write uses it; it then serves that object only.

    Unknown in this license: 400 naming transactionID. Bound to another object: 409 `transaction_bound`.
    """
    upload = (
        AttachmentTransaction.objects.for_license(license)
        .select_for_update()
        .filter(pk=transaction_id)
        .first()
    )
    if upload is None:
        raise field_error("transactionID", f"'{transaction_id}' does not exist in this license.")
    if upload.bound_id is not None and (upload.bound_type, upload.bound_id) != (bound_type, bound_id):
        raise Conflict("This transaction is already bound to another object.", code="transaction_bound")
    if upload.bound_id is None:
        upload.bound_type, upload.bound_id = bound_type, bound_id
        upload.save(update_fields=["bound_type", "bound_id"])
    return upload


# --- licenses -----------------------------------------------------------------------------------------


@unit_of_work
def license_create(
    *,
    owner_email: str,
    owner_name: str = "",
    company_name: str = "",
    source: dict | None = None,
    plan_code: str | None = None,
    coupon_code: str = "",
    first_license_only: bool = False,
) -> License:
    """A license with its default team and an active owner agent, all or nothing; the apps built on accounts
    add theirs in the same transaction (`license_created`: the default template, the trial on `plan_code`).

    The account is created if needed. `first_license_only` (the API's first login) refuses with 409 an
    account that is already an active agent somewhere; the account row lock makes two racing calls one.
    """
    account = account_get_or_create(email=owner_email, name=owner_name)
    if first_license_only:
        Account.objects.select_for_update(no_key=True).get(pk=account.pk)
        if Agent.objects.filter(account=account, status=STATUS_ACTIVE).exists():
            raise Conflict("This account already has a license.", code="license_exists")
    settings_ = default_license_settings() | ({"companyName": company_name} if company_name else {})
    license = License(settings=settings_, source=default_license_source() | (source or {}))
    owner_id = uuid.uuid4()
    creator = current_actor()
    by_owner = creator.id is not None and creator.id == account.pk
    stamp_create(license)
    if by_owner:  # a newcomer creates their own license: they are its owner agent from the first row on
        license.created_by = license.updated_by = str(owner_id)
    license.save()
    acting = dataclasses.replace(creator, agent_id=owner_id, license_id=license.pk) if by_owner else creator
    with acting_as(acting):
        _license_populate(license, account, owner_id, owner_name, plan_code, coupon_code)
    return license


def _license_populate(license, account, owner_id, owner_name, plan_code, coupon_code) -> None:
    """The default team and the owner agent of a new license, then what the other apps add to it."""
    team = Team(license=license, name=DEFAULT_TEAM_NAME)
    stamp_create(team)
    team.save()
    license.default_team = team
    license.save(update_fields=["default_team"])
    owner = Agent(
        id=owner_id,
        license=license,
        account=account,
        email=account.email,
        name=owner_name or account.name,
        roles=[ROLE_OWNER],
        status=STATUS_ACTIVE,
    )
    stamp_create(owner)
    owner.save()
    owner.teams.add(team)
    license_created.send(
        sender=License, license=license, owner=owner, plan_code=plan_code, coupon_code=coupon_code
    )


@unit_of_work
def license_update(*, license: License, data: dict) -> License:
    """PATCH of a license: defaultTeamID, defaultTemplateID and settings (merged)."""
    license = License.objects.select_for_update(no_key=True).get(pk=license.pk)
    if "default_team" in data:
        team = data["default_team"]
        if team.license_id != license.pk:
            raise field_error("defaultTeamID", "No such team in this license.")
        license.default_team = team
    if "default_template" in data:
        template = data["default_template"]
        if template.license_id != license.pk:
            raise field_error("defaultTemplateID", "No such template in this license.")
        license.default_template = template
    if "settings" in data:
        license.settings = {**license.settings, **data["settings"]}
    stamp_update(license)
    license.save()
    return license


# --- teams ----------------------------------------------------------------------------------------------


def same_license(license: License, objects, field: str) -> None:
    """Related objects named in a body (None: not named) must belong to `license` (400 naming the field)."""
    for obj in objects:
        if obj is not None and obj.license_id != license.pk:
            raise field_error(field, f"'{obj.pk}' does not exist in this license.")


def _check_team_name(license: License, name: str, exclude=None) -> None:
    clash = Team.objects.for_license(license).filter(name__iexact=name)
    if exclude is not None:
        clash = clash.exclude(pk=exclude.pk)
    if clash.exists():
        raise field_error("name", "A team with this name already exists.", code="unique")


_TEAM_FIELDS = ("name", "settings", "reply_address_id", "reply_name", "template", "integrations")


@unit_of_work
def team_create(*, license: License, name: str, autoassignment_agents=None, **fields) -> Team:
    _check_team_name(license, name)
    if fields.get("template") is not None:
        same_license(license, [fields["template"]], "templateID")
    _check_reply_address(license, fields)
    team = Team(license=license, name=name)
    _apply_team_fields(team, fields)
    stamp_create(team)
    team.save()
    if autoassignment_agents:
        same_license(license, autoassignment_agents, "autoassignmentAgentIDs")
        team.autoassignment_agents.set(autoassignment_agents)
    return team


def _check_reply_address(license: License, fields: dict) -> None:
    if fields.get("reply_address_id") is not None:
        team_reply_address_chosen.send(
            sender=Team, license=license, reply_address_id=fields["reply_address_id"]
        )


def _apply_team_fields(team: Team, fields: dict) -> None:
    for key, value in fields.items():
        if key not in _TEAM_FIELDS:
            raise TypeError(f"unknown team field {key}")
        if key == "settings":
            value = {**team.settings, **value}
        setattr(team, key, value)


@unit_of_work
def team_update(*, team: Team, autoassignment_agents=None, **fields) -> Team:
    license = team.license
    if autoassignment_agents is not None:
        # Removed agents' tickets are released below (tickets, then teams): the license row first, before the
        # team's, as an agent's deactivation takes it before its tickets (docs/architecture.md, locks).
        License.objects.select_for_update(no_key=True).get(pk=license.pk)
    if "name" in fields:
        _check_team_name(license, fields["name"], exclude=team)
    if fields.get("template") is not None:
        same_license(license, [fields["template"]], "templateID")
    _check_reply_address(license, fields)
    _apply_team_fields(team, fields)
    stamp_update(team)
    team.save()
    if autoassignment_agents is not None:
        same_license(license, autoassignment_agents, "autoassignmentAgentIDs")
        removed = team.autoassignment_agents.exclude(pk__in=[a.pk for a in autoassignment_agents])
        removed = list(removed)
        team.autoassignment_agents.set(autoassignment_agents)
        for agent in removed:  # their open tickets of this team go back to its pool
            agent_leaving.send(sender=Agent, agent=agent, team_ids={team.pk})
    return team


@unit_of_work
def teams_bulk_update(*, license: License, teams: list[Team], fields: dict) -> list[Team]:
    return [team_update(team=team, **fields) for team in teams]


@unit_of_work
def team_delete(*, team: Team) -> None:
    license = License.objects.select_for_update(no_key=True).get(pk=team.license_id)
    if license.default_team_id == team.pk:
        raise Conflict(
            "The default team cannot be deleted; make another team the default first.", code="default_team"
        )
    team.delete()  # its ticket links go with it (cascade); the apps above see it through the model's signals


# --- agents ---------------------------------------------------------------------------------------------

_AGENT_FIELDS = (
    "name", "roles", "status", "avatar", "job_title", "flags", "settings", "autoassignment",
    "signature_text", "signature_rich_text",
)  # fmt: skip


def _apply_agent_fields(agent: Agent, fields: dict) -> None:
    for key, value in fields.items():
        if key not in _AGENT_FIELDS:
            raise TypeError(f"unknown agent field {key}")
        if key in ("flags", "settings"):
            value = {**getattr(agent, key), **value}
        setattr(agent, key, value)


def _active_owner_ids(license: License) -> set:
    return {
        pk
        for pk, roles in Agent.objects.for_license(license)
        .filter(status=STATUS_ACTIVE)
        .values_list("id", "roles")
        if ROLE_OWNER in roles
    }


def _keep_an_owner(license: License, agent: Agent, *, leaving: bool) -> None:
    """Refuse a change that would leave the license without an active owner (409)."""
    License.objects.select_for_update(no_key=True).get(pk=license.pk)  # serialize owner changes per license
    owners = _active_owner_ids(license)
    still_owner = not leaving and agent.status == STATUS_ACTIVE and ROLE_OWNER in agent.roles
    if agent.pk in owners and not still_owner and len(owners) == 1:
        raise Conflict("A license must keep at least one active owner.", code="last_owner")


def _set_agent_relations(agent: Agent, teams, autoassignment_teams, transaction_id=None) -> None:
    license = agent.license
    if transaction_id is not None:
        upload = transaction_bind(
            license=license, transaction_id=transaction_id, bound_type="agent", bound_id=agent.pk
        )
        agent.signature_attachments.set(upload.attachments.all())
    if teams is not None:
        same_license(license, teams, "teamIDs")
        agent.teams.set(teams)
    if autoassignment_teams is not None:
        same_license(license, autoassignment_teams, "autoassignmentTeamIDs")
        agent.autoassignment_teams.set(autoassignment_teams)


def _ensure_seat(license: License) -> None:
    """One more active agent must fit the paid seats (billing refuses with 409 `seat_limit_reached`)."""
    agent_activating.send(sender=Agent, license=license)


@unit_of_work
def agent_create(
    *,
    license: License,
    email: str,
    roles: list[str],
    teams=None,
    autoassignment_teams=None,
    transaction_id=None,
    **fields,
) -> Agent:
    """An agent for `email`, always `invited` (whatever `status` says) until the person accepts the e-mailed
    invitation: an account belongs to whoever proves the address, never to the license that typed it, and
    whether the address already has an account shows nowhere (the same status, the same response)."""
    email = email.strip().lower()
    if Agent.objects.for_license(license).filter(email__iexact=email).exists():
        raise field_error("email", "An agent with this e-mail already exists in this license.", code="unique")
    account = account_get_or_create(email=email, name=fields.get("name", ""))
    agent = Agent(license=license, account=account, email=email, roles=roles)
    _apply_agent_fields(agent, fields)
    agent.status = STATUS_INVITED  # takes no seat until it accepts (agent_activate)
    stamp_create(agent)
    agent.save()
    _set_agent_relations(agent, teams, autoassignment_teams, transaction_id)
    agent_invited.send(sender=Agent, agent=agent)  # the e-mail app invites them (after commit)
    return agent


@unit_of_work
def agent_update(
    *, agent: Agent, teams=None, autoassignment_teams=None, transaction_id=None, **fields
) -> Agent:
    if "roles" in fields or "status" in fields:
        # The license row first (the owner check below locks it), as an agent's deletion does: one lock order.
        License.objects.select_for_update(no_key=True).get(pk=agent.license_id)
    agent = (
        Agent.objects.select_for_update(no_key=True, of=("self",)).select_related("license").get(pk=agent.pk)
    )
    was_active = agent.status == STATUS_ACTIVE
    teams_before = set(agent.teams.values_list("pk", flat=True)) if teams is not None else set()
    auto_before = (
        set(agent.autoassignment_teams.values_list("pk", flat=True))
        if autoassignment_teams is not None
        else set()
    )
    _apply_agent_fields(agent, fields)
    if agent.status == STATUS_ACTIVE and not was_active:
        # Only the invited person makes the membership active (`agent_activate`, by accepting).
        raise Conflict(
            "An invited agent becomes active when they accept the invitation.",
            code="invitation_pending",
            details={"status": ["An invited agent becomes active when they accept the invitation."]},
        )
    if "roles" in fields or "status" in fields:
        _keep_an_owner(agent.license, agent, leaving=False)
    stamp_update(agent)
    agent.save()
    _set_agent_relations(agent, teams, autoassignment_teams, transaction_id)
    # Their open tickets go back to the teams' pools (tickets.autoassign), in this transaction.
    left = (teams_before - {t.pk for t in teams or []}) | (
        auto_before - {t.pk for t in autoassignment_teams or []}
    )
    if was_active and agent.status != STATUS_ACTIVE:
        agent_leaving.send(sender=Agent, agent=agent, team_ids=None)
    elif left:
        agent_leaving.send(sender=Agent, agent=agent, team_ids=left)
    return agent


@unit_of_work
def agent_activate(*, agent: Agent) -> Agent:
    """An invited agent becomes active: only when its person accepts the invitation (templates_app.invitations)
    takes a seat (409 `seat_limit_reached` when none is free)."""
    License.objects.select_for_update(no_key=True).get(pk=agent.license_id)  # first: the seat check locks it
    agent = (
        Agent.objects.select_for_update(no_key=True, of=("self",)).select_related("license").get(pk=agent.pk)
    )
    if agent.status == STATUS_ACTIVE:
        return agent
    _ensure_seat(agent.license)
    agent.status = STATUS_ACTIVE
    stamp_update(agent)
    agent.save()
    return agent


@unit_of_work
def agents_bulk_update(*, agents: list[Agent], fields: dict) -> list[Agent]:
    return [agent_update(agent=agent, **fields) for agent in agents]


@unit_of_work
def agent_delete(*, agent: Agent) -> None:
    _keep_an_owner(agent.license, agent, leaving=True)
    agent_leaving.send(sender=Agent, agent=agent, team_ids=None)  # before the row (and the FKs to it) go
    agent.delete()

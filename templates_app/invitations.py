"""Invitations of `invited` agents: an e-mail (made from the license's template) with a signed, expiring link.

The link carries the `Invitation` row's ID signed with a TimestampSigner (own salt), so it cannot be forged,
and expires after `HELPDESK_INVITATION_MAX_AGE_DAYS`. The row makes it single-use: accepting stamps
`accepted_at`, re-inviting stamps `revoked_at` on every earlier invitation of the agent.

Accepting proves that the person reads that mailbox. For an account nobody holds yet (no password, no token;
memberships other licenses created for the address do not count) it returns the first personal access token and may set the password. An account that is already
in use must accept while authenticated as itself, so that a leaked invitation link cannot take it over.
"""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import quote

from django.conf import settings
from django.contrib.auth import password_validation
from django.core import signing
from django.core.exceptions import ValidationError
from django.utils import timezone

from accounts.models import STATUS_INVITED, Agent, License
from helpdesk.context import current_actor
from helpdesk.errors import Conflict, Forbidden, Invalid, field_error
from helpdesk.transactions import unit_of_work
from templates_app import mail
from templates_app.models import Invitation, OutboundMessage

SALT = "helpdesk.invitation"


def _signer() -> signing.TimestampSigner:
    return signing.TimestampSigner(salt=SALT)


def max_age() -> timedelta:
    return timedelta(days=settings.HELPDESK_INVITATION_MAX_AGE_DAYS)


def invitation_token(invitation: Invitation) -> str:
    return _signer().sign(str(invitation.pk))


def invitation_url(invitation: Invitation) -> str:
    return f"{settings.HELPDESK_APP_URL.rstrip('/')}/invitations/accept?token={quote(invitation_token(invitation))}"


def _inviter(license) -> Agent | None:
    actor = current_actor()
    if actor.id is None:
        return None
    return Agent.objects.for_license(license).filter(account_id=actor.id).first()


@unit_of_work
def invitation_send(*, agent: Agent) -> Invitation:
    """A new invitation for an invited agent (earlier links die), e-mailed after commit."""
    license = agent.license
    now = timezone.now()
    for earlier in Invitation.objects.for_license(license).filter(
        agent=agent, accepted_at__isnull=True, revoked_at__isnull=True
    ):
        earlier.revoked_at = now
        earlier.save(update_fields=["revoked_at"])
    invitation = Invitation.objects.create(license=license, agent=agent)
    inviter = _inviter(license)
    company = (license.settings or {}).get("companyName") or "a team"
    opener = f"{inviter.name or inviter.email} invited you" if inviter else "You have been invited"
    days = settings.HELPDESK_INVITATION_MAX_AGE_DAYS
    body = (
        f"{opener} to join {company} on HelpDesk.\n\n"
        f"Accept the invitation: {invitation_url(invitation)}\n\n"
        f"The link works once and expires in {days} day{'s' if days != 1 else ''}."
    )
    mail.license_mail_queue(
        license=license,
        kind=OutboundMessage.KIND_INVITATION,
        key=f"invitation:{invitation.pk}",
        to=agent.email,
        subject=f"You are invited to join {company} on HelpDesk",
        body=body,
        agent=inviter,
        **{"requester.name": agent.name, "requester.email": agent.email},
    )
    return invitation


def on_agent_invited(sender, *, agent: Agent, **kwargs) -> None:
    """Receiver of accounts.signals.agent_invited."""
    invitation_send(agent=agent)


def agent_reinvite(*, agent: Agent) -> Invitation:
    if agent.status != STATUS_INVITED:
        raise Conflict("This agent has already accepted the invitation.", code="agent_active")
    return invitation_send(agent=agent)


def _invalid() -> Invalid:
    return Invalid(
        "This invitation link is not valid.",
        code="invitation_invalid",
        details={"token": ["Not a valid link."]},
    )


def _account_in_use(account) -> bool:
    """Whether someone already holds the account's credentials. A membership is no credential: a license that
    typed the address first (an agent created for it) does not make the account theirs or lock its person out;
    whoever proves the address with this link (or a password reset) takes it."""
    return account.has_usable_password() or account.tokens.filter(revoked_at__isnull=True).exists()


@unit_of_work
def invitation_accept(*, token: str, password: str | None = None, caller=None) -> tuple[Agent, str | None]:
    """Activate the invited agent; returns it and, for a new account, its first token (plaintext, once)."""
    from accounts import services as accounts_services

    signer = _signer()
    try:
        invitation_id = signer.unsign(token)
    except signing.BadSignature:
        raise _invalid() from None
    license_id = (
        Invitation.objects.filter(pk=invitation_id).values_list("agent__license_id", flat=True).first()
    )
    if license_id is None:
        raise _invalid()
    # The license row first (the seat check locks it), as an agent's deletion does before it deletes the
    # invitation: one lock order (docs/architecture.md).
    License.objects.select_for_update(no_key=True).get(pk=license_id)
    invitation = (
        Invitation.objects.select_for_update(no_key=True, of=("self",))
        .select_related("agent__account", "agent__license")
        .filter(pk=invitation_id)
        .first()
    )
    if invitation is None:
        raise _invalid()
    if invitation.accepted_at is not None:
        raise Conflict("This invitation has already been accepted.", code="invitation_used")
    if invitation.revoked_at is not None:
        raise Conflict(
            "This invitation was replaced by a newer one; use the latest e-mail.", code="invitation_revoked"
        )
    try:
        signer.unsign(token, max_age=max_age())
    except signing.SignatureExpired:
        raise Invalid("This invitation has expired; ask for a new one.", code="invitation_expired") from None

    agent, account = invitation.agent, invitation.agent.account
    in_use = _account_in_use(account)
    if caller is not None and caller.pk != account.pk:
        raise Forbidden("This invitation is for another account.")
    if in_use and caller is None:
        raise Forbidden("This account already exists; accept the invitation while signed in.")
    if password is not None:
        if in_use:
            raise field_error("password", "This account already has its credentials.")
        try:
            password_validation.validate_password(password, user=account)
        except ValidationError as exc:
            raise Invalid(
                f"Invalid value for 'password': {' '.join(exc.messages)}", details={"password": exc.messages}
            ) from None
        account.set_password(password)
        account.save(update_fields=["password"])

    invitation.accepted_at = timezone.now()
    invitation.save(update_fields=["accepted_at"])
    agent = accounts_services.agent_activate(agent=agent)
    plaintext = None
    if not in_use:
        _, plaintext = accounts_services.token_issue(account=account, name="invitation")
    return agent, plaintext

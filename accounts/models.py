"""The base of the domain: accounts (identities), licenses (customer accounts), agents, teams, tokens,
and the attachment transactions that agents, templates and tickets share.

Every license-owned model inherits `LicenseOwned`, whose queryset has `for_license()`: the one place where
tenancy is expressed (see helpdesk/api/tenancy.py for the viewset side).
"""

from __future__ import annotations

import uuid

from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.contrib.auth.models import PermissionsMixin
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

# The roles are the API's vocabulary too (helpdesk/api/permissions.py); importers keep reading them here.
from helpdesk.roles import ROLE_NORMAL, ROLE_OWNER, ROLE_VIEWER, ROLES  # noqa: F401

CREATED_BY_TYPES = [("agent", "agent"), ("client", "client"), ("system", "system")]


class AccountManager(BaseUserManager):
    use_in_migrations = True

    def create_user(self, email, password=None, **extra):
        if not email:
            raise ValueError("An account needs an e-mail address")
        account = self.model(email=self.normalize_email(email).lower(), **extra)
        account.set_password(password)
        account.save(using=self._db)
        return account

    def create_superuser(self, email, password=None, **extra):
        extra.update(is_staff=True, is_superuser=True)
        return self.create_user(email, password, **extra)

    def get_by_natural_key(self, username):
        return self.get(email__iexact=username)


class Account(AbstractBaseUser, PermissionsMixin):
    """A person's identity: the Django user, the `accountID` of Basic authentication, the owner of tokens."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.EmailField(max_length=254, unique=True)
    name = models.CharField(max_length=200, blank=True)
    is_staff = models.BooleanField(default=False)
    is_active = models.BooleanField(default=True)
    date_joined = models.DateTimeField(default=timezone.now)

    objects = AccountManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: list[str] = []

    class Meta:
        constraints = [models.UniqueConstraint(Lower("email"), name="account_email_ci_unique")]

    def __str__(self):
        return self.email


class PersonalAccessToken(models.Model):
    """A personal access token: shown once, stored only as its SHA-256, revocable, scoped."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=100, blank=True)
    # The first characters of the token, to recognise it in lists (never enough to use it).
    hint = models.CharField(max_length=16)
    token_hash = models.CharField(max_length=64, unique=True)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "personal access token"

    def __str__(self):
        return f"{self.hint}… ({self.name or 'token'})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


def default_license_settings() -> dict:
    return {
        "companyName": "",
        "externalTickets": False,
        "ticketThread": True,
        "maxSubscriptionsPerSocket": 10,
        "defaultMailboxDescription": "",
        "maxChildTicketsPerTicket": 25,
        "poweredByFooter": True,
    }


def default_license_flags() -> dict:
    return {"defaultInboxUsed": False}


LICENSE_SOURCE_FIELDS = [
    "utmSource", "utmMedium", "utmCampaign", "utmContent", "utmTerm",
    "referrer", "landingPage", "sourceURL", "sourceID", "sourceType",
]  # fmt: skip


def default_license_source() -> dict:
    return {key: "" for key in LICENSE_SOURCE_FIELDS}


class License(models.Model):
    """A customer account of the help desk: settings, flags, where it came from, its defaults."""

    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=64, blank=True)
    created_by_type = models.CharField(max_length=10, choices=CREATED_BY_TYPES, default="system")
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.CharField(max_length=64, blank=True)
    # Never null once the license is created (license_create sets it in the same transaction).
    default_team = models.ForeignKey(
        "accounts.Team", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    default_template = models.ForeignKey(
        "templates_app.Template", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    flags = models.JSONField(default=default_license_flags)
    settings = models.JSONField(default=default_license_settings)
    source = models.JSONField(default=default_license_source)
    detected_languages = models.JSONField(default=list, blank=True)

    def __str__(self):
        company = (self.settings or {}).get("companyName")
        return f"License {self.pk}" + (f" ({company})" if company else "")


class LicenseQuerySet(models.QuerySet):
    def for_license(self, license):
        return self.filter(license=license)


class LicenseOwned(models.Model):
    """Abstract base of every license-owned model: the license, and `objects.for_license()`."""

    license = models.ForeignKey(License, on_delete=models.CASCADE, related_name="%(class)ss")

    objects = LicenseQuerySet.as_manager()

    class Meta:
        abstract = True


class Stamped(models.Model):
    """The spec's createdAt/createdBy/createdByType/updatedAt/updatedBy."""

    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.UUIDField(null=True, blank=True)
    created_by_type = models.CharField(max_length=10, choices=CREATED_BY_TYPES, default="system")
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.UUIDField(null=True, blank=True)

    class Meta:
        abstract = True


def default_team_settings() -> dict:
    return {
        "notifyTeamAboutRequestersActivity": False,
        "notifyTeamAboutAssignedTicket": True,
        "unauthReplyCreatesNewTicket": False,
        "tagReminder": False,
    }


class Team(LicenseOwned, Stamped):
    """A group of agents; tickets are assigned to teams. Each license has exactly one default team."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    settings = models.JSONField(default=default_team_settings)
    reply_address_id = models.UUIDField(null=True, blank=True)
    reply_name = models.CharField(max_length=200, blank=True)
    template = models.ForeignKey(
        "templates_app.Template", null=True, blank=True, on_delete=models.SET_NULL, related_name="teams"
    )
    integrations = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint("license", Lower("name"), name="team_name_unique_per_license"),
        ]
        indexes = [models.Index(fields=["license", "created_at"], name="team_license_created")]

    def __str__(self):
        return self.name

    @property
    def is_default(self) -> bool:
        return self.license.default_team_id == self.pk


STATUS_ACTIVE, STATUS_INVITED = "active", "invited"


def default_agent_flags() -> dict:
    return {"visitedWelcomeTutorial": False}


def default_agent_settings() -> dict:
    return {"emailNotificationsActive": True, "webpushNotificationsActive": "default"}


class Agent(LicenseOwned, Stamped):
    """An account's membership in a license, with its roles, teams and profile."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="memberships")
    email = models.EmailField(max_length=254)
    name = models.CharField(max_length=200, blank=True)
    roles = models.JSONField(default=list)
    status = models.CharField(
        max_length=10, choices=[(STATUS_ACTIVE, "active"), (STATUS_INVITED, "invited")], default=STATUS_ACTIVE
    )
    avatar = models.CharField(max_length=500, blank=True)
    job_title = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 (the spec's jobTitle is nullable)
    flags = models.JSONField(default=default_agent_flags)
    settings = models.JSONField(default=default_agent_settings)
    autoassignment = models.BooleanField(default=False)
    signature_text = models.TextField(blank=True)
    signature_rich_text = models.JSONField(default=list, blank=True)
    signature_attachments = models.ManyToManyField("accounts.Attachment", blank=True, related_name="+")
    teams = models.ManyToManyField(Team, through="TeamMembership", related_name="agents", blank=True)
    autoassignment_teams = models.ManyToManyField(
        Team, through="AutoassignmentMembership", related_name="autoassignment_agents", blank=True
    )

    class Meta:
        constraints = [
            models.UniqueConstraint("license", Lower("email"), name="agent_email_unique_per_license"),
            models.UniqueConstraint("license", "account", name="agent_account_unique_per_license"),
        ]
        indexes = [models.Index(fields=["license", "created_at"], name="agent_license_created")]

    def __str__(self):
        return f"{self.name or self.email}"

    @property
    def is_owner(self) -> bool:
        return ROLE_OWNER in self.roles

    @property
    def is_viewer_only(self) -> bool:
        return set(self.roles) <= {ROLE_VIEWER}


class TeamMembership(models.Model):
    """An agent belongs to a team (teamIDs)."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE)
    team = models.ForeignKey(Team, on_delete=models.CASCADE)

    class Meta:
        constraints = [models.UniqueConstraint("team", "agent", name="team_membership_unique")]
        indexes = [models.Index(fields=["agent", "team"], name="team_membership_agent")]

    def __str__(self):
        return f"{self.agent_id} in {self.team_id}"


class AutoassignmentMembership(models.Model):
    """An agent may be auto-assigned tickets of a team (agent autoassignmentTeamIDs = team autoassignmentAgentIDs)."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE)
    team = models.ForeignKey(Team, on_delete=models.CASCADE)
    # The team's round-robin cursor: when this agent last got one of the team's tickets automatically.
    last_assigned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint("team", "agent", name="autoassignment_membership_unique")]
        indexes = [models.Index(fields=["agent", "team"], name="autoassign_agent")]

    def __str__(self):
        return f"{self.agent_id} auto-assigned from {self.team_id}"


class AttachmentTransaction(LicenseOwned):
    """An upload session: files are posted to it, then its ID is sent with the write that uses them.

    Once a write consumes it, it is bound to that object and cannot be used for another (409).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        Account, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    bound_type = models.CharField(max_length=30, blank=True)  # "ticket", "agent", "template"
    bound_id = models.UUIDField(null=True, blank=True)

    class Meta:
        # The purge finds the transactions of a batch of tickets by what they are bound to.
        indexes = [models.Index(fields=["license", "bound_type", "bound_id"], name="txn_license_bound")]

    def __str__(self):
        return f"transaction {self.pk}"


def attachment_path(instance, filename):
    return f"attachments/{instance.license_id}/{instance.transaction_id}/{instance.token}/{filename}"


class Attachment(LicenseOwned):
    """A stored file (through Django's storage API), with the spec's url/cid/name/type/sha256/token/size."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    transaction = models.ForeignKey(
        AttachmentTransaction, on_delete=models.CASCADE, related_name="attachments"
    )
    file = models.FileField(upload_to=attachment_path, max_length=500)
    name = models.CharField(max_length=255)
    content_type = models.CharField(max_length=255)
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    token = models.CharField(max_length=64, unique=True)
    cid = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return self.name


from accounts.oauth.models import LicenseApp  # noqa: E402, F401

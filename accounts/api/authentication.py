"""`Authorization: Basic base64(accountID:token)` with personal access tokens, and `Bearer` OAuth access tokens.
Wired by `REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"]` (helpdesk/settings.py): accounts' own tokens and
agents, so accounts' own module; the shared API machinery (helpdesk/api/) only reads what it sets on the request.

The token is high-entropy, so a single SHA-256 is the right hash: it is looked up by its unique index and
compared in constant time. (Django's password hasher would cost ~186 ms per request.) Resolving the token
also resolves the caller's license, once: `request.license` and `request.agent` are set here and nowhere else.
What it resolved is kept per process under versions that every change drops (accounts.api.callers): a warm
request runs no statement for its caller.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import hashlib
import uuid
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init
from django.utils import timezone
from rest_framework import authentication, exceptions

from accounts.api import callers
from accounts.oauth.scopes import allows
from accounts.tokens import MIN_SCOPE, hash_token
from helpdesk.context import API, update_actor
from helpdesk.logs import bind as bind_log_context

LAST_USED_RESOLUTION = timedelta(minutes=1)
FAILURE_WINDOW_SECONDS = 60
_INVALID = "Invalid credentials."
MAX_LICENSE_ID = 2**63 - 1  # the primary key is a bigint


def _canonical_account_id(account_hint: str) -> uuid.UUID | None:
    """The account ID in any spelling `uuid.UUID` reads (upper case, no hyphens, braces), else None."""
    try:
        return uuid.UUID(account_hint)
    except ValueError:
        return None


def _failure_keys(request, account_hint: str) -> list[str]:
    ip = request.META.get("REMOTE_ADDR", "")
    keys = [f"authfail:ip:{ip}"]
    # Keyed by the canonical ID: every spelling of one account shares one bucket. A hint that is no UUID
    # names no account (it can never authenticate), so only the address counts its failures.
    account_id = _canonical_account_id(account_hint)
    if account_id is not None:
        keys.append(f"authfail:acct:{account_id}")
    return keys


def _check_throttle(keys: list[str]) -> None:
    limit = settings.HELPDESK_AUTH_FAILURES_PER_MINUTE
    counts = cache.get_many(keys)
    if any(count >= limit for count in counts.values()):
        raise exceptions.Throttled(
            wait=FAILURE_WINDOW_SECONDS, detail="Too many failed authentication attempts."
        )


def _record_failure(keys: list[str]) -> None:
    for key in keys:
        if cache.add(key, 1, FAILURE_WINDOW_SECONDS):
            continue
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.add(key, 1, FAILURE_WINDOW_SECONDS)


def _wanted_license(request) -> int | None:
    """The `X-License-ID` header: which of the account's licenses a request is for (default: its oldest)."""
    wanted = request.META.get("HTTP_X_LICENSE_ID", "").strip()
    if not wanted:
        return None
    # ASCII digits only ("²".isdigit() is true, and int() refuses it), and no more than a bigint holds.
    if not (wanted.isascii() and wanted.isdigit()) or len(wanted) > 19 or int(wanted) > MAX_LICENSE_ID:
        raise exceptions.ValidationError({"X-License-ID": ["Must be a license ID."]})
    return int(wanted)


def _parse_basic(header: str) -> tuple[str, str]:
    try:
        decoded = base64.b64decode(header, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise exceptions.AuthenticationFailed(_INVALID) from None
    account_id, sep, token = decoded.partition(":")
    if not sep or not account_id or not token:
        raise exceptions.AuthenticationFailed(_INVALID)
    return account_id, token


class TokenBasicAuthentication(authentication.BaseAuthentication):
    keyword = "Basic"

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() == "bearer":
            return None  # OAuthBearerAuthentication's
        if scheme.lower() != "basic" or not credentials.strip():
            raise exceptions.AuthenticationFailed(_INVALID)
        account_id, token = _parse_basic(credentials.strip())
        wanted_license = _wanted_license(request)
        request.wanted_license_id = wanted_license  # for the 403 when the caller is no agent of it
        found = self._cached_lookup(request, account_id, token, wanted_license)
        if found is None:
            # Only failures touch the throttle: valid credentials are never locked out by someone else's
            # failures from the same address, and a successful request costs no cache round trip.
            keys = _failure_keys(request, account_id)
            _check_throttle(keys)
            _record_failure(keys)
            raise exceptions.AuthenticationFailed(_INVALID)
        pat, agent, caller = found
        account = pat.account
        self._touch(pat)
        caller.last_used_at = pat.last_used_at
        request.token = pat
        request.agent = agent
        request.license = agent.license if agent else None
        update_actor(
            type=API,
            id=account.id,
            email=account.email,
            agent_id=agent.pk if agent else None,
            license_id=agent.license_id if agent else None,
        )
        bind_log_context(license=request.license.id if request.license else None, account=str(account.id))
        return account, pat

    def authenticate_header(self, request):
        # DRF asks the first authentication class only: a Bearer caller is told about Bearer.
        if _scheme(request) == "bearer":
            return OAuthBearerAuthentication.challenge
        return 'Basic realm="helpdesk"'

    @staticmethod
    def _cached_lookup(request, account_id: str, token: str, wanted_license: int | None):
        """`_lookup`'s (token, membership) and the process's copy of them (accounts.api.callers), else None."""
        if not token.startswith(settings.HELPDESK_TOKEN_PREFIX):
            return None
        account_uuid = _canonical_account_id(account_id)
        if account_uuid is None:
            return None
        token_hash = hash_token(token)
        live = []

        def load():
            found = _checked(_caller(token_hash, account_uuid, wanted_license))
            if found is None:
                return None
            live.append(found)
            pat, agent = found
            caller = _PatCaller(
                callers.snapshot(pat),
                pat.last_used_at,
                callers.snapshot(pat.account),
                None if agent is None else callers.snapshot(agent),
                None if agent is None else callers.snapshot(agent.license),
            )
            return (
                caller,
                pat.account_id,
                agent.license_id if agent else None,
                f"{type(pat).__name__}:{pat.pk}",
            )

        caller = callers.resolve(request, ("basic", token_hash, account_uuid, wanted_license), load)
        if caller is None:
            return None
        # The rows just read (with what the apps load with the license), else new instances from the copy.
        pat, agent = live[0] if live else caller.instances()
        return pat, agent, caller

    @staticmethod
    def _lookup(account_id: str, token: str, wanted_license: int | None):
        """(token, membership) for valid credentials, else None; always exactly one query.

        The membership is the caller's active agent (the oldest, or the `X-License-ID` one), None for an account
        with no such membership (first login, before it creates its license). An unknown token and a valid token
        sent with another account's ID take the same path (the account is part of the query, no row comes
        back), so neither the answer nor its timing tells whether a leaked token is live.
        """
        if not token.startswith(settings.HELPDESK_TOKEN_PREFIX):
            return None
        account_uuid = _canonical_account_id(account_id)
        if account_uuid is None:
            return None
        return _checked(_caller(hash_token(token), account_uuid, wanted_license))

    @staticmethod
    def _touch(pat) -> None:
        now = timezone.now()
        if pat.last_used_at is None or now - pat.last_used_at >= LAST_USED_RESOLUTION:
            type(pat).objects.filter(pk=pat.pk).update(last_used_at=now)
            pat.last_used_at = now


def _checked(found):
    """The caller's (token, membership) if the account is active and the token may authenticate, else None."""
    if found is None:
        return None
    pat, agent = found
    if not pat.account.is_active or MIN_SCOPE not in pat.scopes:
        return None
    return pat, agent


@dataclasses.dataclass(slots=True)
class _PatCaller:
    """A personal access token's caller as the process keeps it (accounts.api.callers): copies of the rows."""

    pat: tuple
    last_used_at: object  # this process's latest (the once-a-minute write, `_touch`, keeps it)
    account: tuple
    agent: tuple | None
    license: tuple | None

    def instances(self):
        from accounts.models import Agent, PersonalAccessToken

        account = callers.restore(self.account)
        pat = callers.restore(self.pat)
        pat.last_used_at = self.last_used_at
        PersonalAccessToken.account.field.set_cached_value(pat, account)
        if self.agent is None:
            return pat, None
        agent = callers.restore(self.agent)
        Agent.license.field.set_cached_value(agent, callers.restore(self.license))
        Agent.account.field.set_cached_value(agent, account)
        return pat, agent


@dataclasses.dataclass(slots=True)
class _OAuthCaller:
    """An OAuth access token's caller as the process keeps it: the grant, its expiry, copies of the rows."""

    grant: object
    expires: object
    account: tuple
    agent: tuple
    license: tuple

    def instances(self):
        from accounts.models import Agent

        account, agent = callers.restore(self.account), callers.restore(self.agent)
        Agent.license.field.set_cached_value(agent, callers.restore(self.license))
        Agent.account.field.set_cached_value(agent, account)
        return account, agent


def _scheme(request) -> str:
    return request.META.get("HTTP_AUTHORIZATION", "").partition(" ")[0].lower()


@dataclasses.dataclass(frozen=True)
class OAuthGrant:
    """`request.token` of a Bearer request: what RolePermission checks (scopes) and what the audit names."""

    access_token_id: int
    scopes: tuple[str, ...]
    app_name: str
    resource_scoped: bool = True  # the scopes name resources (a PAT's only read or write everything)

    @property
    def pk(self) -> int:
        """The access token's ID: the per-token rate-limit bucket (helpdesk.api.ratelimit), as a PAT's pk is."""
        return self.access_token_id

    def allows(self, path: str, *, write: bool) -> bool:
        """Whether a scope of this grant names the resource of `path` (`:rw` to write): RolePermission asks a
        `resource_scoped` token this before the role check."""
        return allows(self.scopes, path, write=write)


class OAuthBearerAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <access token>` issued by /oauth/token (django-oauth-toolkit's AccessToken).

    The caller is the agent who approved the grant, in the app's license; an expired or revoked token, or
    an approving agent no longer active there, is a 401.
    """

    challenge = 'Bearer realm="helpdesk", error="invalid_token"'

    def authenticate(self, request):
        scheme, _, credentials = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        token = credentials.strip()
        found = self._cached_lookup(request, token) if token else None
        if found is None:
            keys = _failure_keys(request, "")
            _check_throttle(keys)
            _record_failure(keys)
            raise exceptions.AuthenticationFailed(_INVALID)
        account, agent, grant = found
        request.token = grant
        request.agent = agent
        request.license = agent.license
        request.wanted_license_id = None
        update_actor(
            type=API,
            id=account.id,
            email=account.email,
            agent_id=agent.pk,
            license_id=agent.license_id,
            app_name=grant.app_name,
        )
        bind_log_context(license=agent.license_id, account=str(account.id))
        return account, grant

    def authenticate_header(self, request):
        return self.challenge

    @classmethod
    def _cached_lookup(cls, request, token: str):
        """(account, agent, grant) for a live token, from the process's copy (accounts.api.callers) while its
        versions are current and the token has not expired, else from `_lookup`; None for no caller."""
        from accounts.oauth.validators import agent_scopes

        checksum = hashlib.sha256(token.encode()).hexdigest()
        live = []

        def load():
            found = cls._lookup(checksum)
            if found is None:
                return None
            access_token, agent = found
            account, application = access_token.user, access_token.application
            grant = OAuthGrant(
                access_token_id=access_token.pk,
                # what the grant may do now: met with the app's current scopes and the agent's current role
                scopes=agent_scopes(
                    access_token.scope.split(), license_app=application.license_app, agent=agent
                ),
                app_name=application.name,
            )
            live.append((account, agent, grant))
            caller = _OAuthCaller(
                grant,
                access_token.expires,
                callers.snapshot(account),
                callers.snapshot(agent),
                callers.snapshot(agent.license),
            )
            return caller, account.pk, agent.license_id, f"{type(grant).__name__}:{grant.pk}"

        caller = callers.resolve(request, ("bearer", checksum), load)
        if caller is None:
            return None
        if live:
            return live[0]
        if timezone.now() >= caller.expires:  # the moment it expires (AccessToken.is_expired)
            return None
        return (*caller.instances(), caller.grant)

    @staticmethod
    def _lookup(checksum: str):
        """(access token, the approving agent in the app's license) for a live token, else None."""
        from oauth2_provider.models import get_access_token_model

        from accounts.models import STATUS_ACTIVE, Agent

        access_token = (
            get_access_token_model()
            .objects.select_related("user", "application__license_app__license")
            .filter(token_checksum=checksum)
            .first()
        )
        if access_token is None or access_token.is_expired() or access_token.user is None:
            return None
        license_app = getattr(access_token.application, "license_app", None)
        if license_app is None or not access_token.user.is_active:
            return None
        agent = (
            Agent.objects.select_related("license", *(f"license__{name}" for name in _license_rows))
            .filter(account=access_token.user, license=license_app.license, status=STATUS_ACTIVE)
            .first()
        )
        if agent is None:
            return None
        agent.account = access_token.user
        return access_token, agent


# --- rows loaded with the caller's license --------------------------------------------------------------
# An app that reads a row of its own per license on every request names it here at ready() (the caller's
# query then joins it, so that it costs no statement of its own); this module knows no app's rows. A caller
# served from the process's copy (accounts.api.callers) comes without them: the app reads its row itself then.
_license_rows: list[str] = []


def load_with_license(name: str) -> None:
    """Load the license's one-to-one row `name` (a reverse OneToOneField of License) with every caller's license,
    cached on it as `select_related` would (None when the license has no such row)."""
    if name not in _license_rows:
        _license_rows.append(name)
        _caller_query.cache_clear()


# --- the caller's query ----------------------------------------------------------------------------------
# Every API request runs it, so it is SQL written once rather than an ORM query compiled per request (the
# compilation of its three joins cost more CPU than the query itself). The columns come from the models, and
# the rows become model instances the way the ORM's compiler makes them (the backend's and the fields'
# converters, then Model.from_db).
# Measured against the plain ORM (session 6, bench/README.md "Cleverness that pays"): the ORM lookup (the
# active Agent with select_related license and account, joined to the token; the token alone when there is
# no membership) cost 1.8-2.0 ms of CPU per call, this one 0.33-0.38 ms; per search request (bench/cpu.py)
# 6.9-8.8 ms against 4.4-5.9 ms. ~1.5 ms, a quarter of a request's CPU: it pays, so it stays.


def _converters(field):
    column = field.get_col(field.model._meta.db_table)
    return connection.ops.get_db_converters(column) + column.get_db_converters(connection), column


def _convert(converters, value):
    functions, column = converters
    for function in functions:
        value = function(value, column, connection)
    return value


@functools.cache
def _caller_query(vendor: str):
    from accounts.models import Account, Agent, License, PersonalAccessToken

    def columns(alias, model):
        return [f'{alias}."{field.column}"' for field in model._meta.concrete_fields]

    pat_fields = [PersonalAccessToken._meta.get_field(name) for name in ("id", "scopes", "last_used_at")]
    rows = [License._meta.get_field(name) for name in _license_rows]  # load_with_license
    select = columns("a", Agent) + columns("l", License) + columns("c", Account)
    joins = []
    for i, row in enumerate(rows):
        select += columns(f"r{i}", row.related_model)
        joins.append(f'LEFT JOIN {row.related_model._meta.db_table} r{i} ON r{i}."{row.field.column}" = l.id')
    select += [f'p."{field.column}"' for field in pat_fields]
    sql = f"""
        SELECT {", ".join(select)}
        FROM {PersonalAccessToken._meta.db_table} p
        JOIN {Account._meta.db_table} c ON c.id = p.account_id
        LEFT JOIN {Agent._meta.db_table} a ON a.account_id = p.account_id AND a.status = %(active)s
          AND (%(license)s::bigint IS NULL OR a.license_id = %(license)s::bigint)
        LEFT JOIN {License._meta.db_table} l ON l.id = a.license_id
        {" ".join(joins)}
        WHERE p.token_hash = %(hash)s AND p.revoked_at IS NULL AND p.account_id = %(account)s
        ORDER BY a.created_at, a.id
        LIMIT 1"""
    if vendor != "postgresql":
        sql = sql.replace("::bigint", "")
    loaders = []
    for model in (Agent, License, Account, *(row.related_model for row in rows)):
        fields = model._meta.concrete_fields
        # Only the columns that have converters (here the JSON ones) are converted: the rest come from psycopg
        # as the model holds them.
        converted = [(i, _converters(field)) for i, field in enumerate(fields) if _converters(field)[0]]
        pk_index = [field.attname for field in fields].index(model._meta.pk.attname)
        loaders.append((model, tuple(field.attname for field in fields), pk_index, converted))
    _check_no_init_signals(model for model, *_ in loaders)
    return sql, loaders, [_converters(field) for field in pat_fields], rows


def _load(model, attnames, converted, values):
    """`model.from_db` of one full row, without `Model.__init__`'s per-field setattr loop: the instance's
    attributes set at once, as `__init__` would for every concrete field (no pre_init/post_init receivers:
    `_check_no_init_signals`). Measured with the conversion of the converted columns only (bench/cpu.py
    --instructions, inbox, 100k-ticket data set): 13.22 M -> 13.08 M instructions per request; the caller's
    lookup alone 272 -> 246 us of CPU (3,000 calls in process). bench/README.md, issue 34."""
    values = list(values)
    for i, converters in converted:
        values[i] = _convert(converters, values[i])
    instance = model.__new__(model)
    instance.__dict__.update(zip(attnames, values, strict=True))
    state = instance._state = ModelState()
    state.adding, state.db = False, connection.alias
    return instance


def _check_no_init_signals(models) -> None:
    """`_load` skips `Model.__init__`, so it would skip its pre_init/post_init signals: none may be connected
    for the caller's models (checked when the query is first built; tests/test_auth.py builds it)."""
    for model in models:
        if pre_init.has_listeners(model) or post_init.has_listeners(model):
            raise ImproperlyConfigured(f"{model.__name__} has init signals: the caller's loader skips them")


def _caller(token_hash: str, account_id: uuid.UUID, wanted_license: int | None):
    """(token, agent with its license and account, or None) for an unrevoked token of `account_id`."""
    from accounts.models import STATUS_ACTIVE, Account, PersonalAccessToken

    sql, loaders, pat_converters, license_rows = _caller_query(connection.vendor)
    params = {
        "hash": token_hash,
        "account": Account._meta.pk.get_db_prep_value(account_id, connection),
        "active": STATUS_ACTIVE,
        "license": wanted_license,
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    instances, start = [], 0
    for model, attnames, pk_index, converted in loaders:
        values = row[start : start + len(attnames)]
        # No membership (or no such row of the license): its columns are all NULL (LEFT JOIN).
        missing = model is not Account and values[pk_index] is None
        instances.append(None if missing else _load(model, attnames, converted, values))
        start += len(attnames)
    agent, license, account, *loaded = instances
    if agent is not None:
        agent.license, agent.account = license, account
        for field, instance in zip(license_rows, loaded, strict=True):
            field.set_cached_value(license, instance)  # as select_related caches it: the row, or None
            if instance is not None:
                field.field.set_cached_value(instance, license)
    pat_id, scopes, last_used_at = (
        _convert(converters, value) for converters, value in zip(pat_converters, row[start:], strict=True)
    )
    pat = PersonalAccessToken(
        id=pat_id, account=account, token_hash=token_hash, scopes=scopes, last_used_at=last_used_at
    )
    return pat, agent

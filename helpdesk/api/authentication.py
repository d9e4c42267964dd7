"""`Authorization: Basic base64(accountID:token)` with personal access tokens.

The token is high-entropy, so a single SHA-256 is the right hash: it is looked up by its unique index and
compared in constant time. (Django's password hasher would cost ~186 ms per request.) Resolving the token
also resolves the caller's license, once: `request.license` and `request.agent` are set here and nowhere else.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import uuid
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.utils import timezone
from rest_framework import authentication, exceptions

from helpdesk.context import API, update_actor
from helpdesk.logs import bind as bind_log_context

MIN_SCOPE = "accounts--my:ro"
LAST_USED_RESOLUTION = timedelta(minutes=1)
FAILURE_WINDOW_SECONDS = 60
_INVALID = "Invalid credentials."
MAX_LICENSE_ID = 2**63 - 1  # the primary key is a bigint


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _failure_keys(request, account_hint: str) -> list[str]:
    ip = request.META.get("REMOTE_ADDR", "")
    keys = [f"authfail:ip:{ip}"]
    if account_hint:
        keys.append(f"authfail:acct:{account_hint[:64]}")
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
        if scheme.lower() != "basic" or not credentials.strip():
            raise exceptions.AuthenticationFailed(_INVALID)
        account_id, token = _parse_basic(credentials.strip())
        found = self._lookup(account_id, token, _wanted_license(request))
        if found is None:
            # Only failures touch the throttle: valid credentials are never locked out by someone else's
            # failures from the same address, and a successful request costs no cache round trip.
            keys = _failure_keys(request, account_id)
            _check_throttle(keys)
            _record_failure(keys)
            raise exceptions.AuthenticationFailed(_INVALID)
        pat, agent = found
        account = pat.account
        self._touch(pat)
        request.token = pat
        request.agent = agent
        request.license = agent.license if agent else None
        update_actor(type=API, id=account.id, email=account.email)
        bind_log_context(license=request.license.id if request.license else None, account=str(account.id))
        return account, pat

    def authenticate_header(self, request):
        return 'Basic realm="helpdesk"'

    @staticmethod
    def _lookup(account_id: str, token: str, wanted_license: int | None):
        """(token, membership) for valid credentials, else None; one query on the hot path.

        The membership is the caller's active agent (the oldest, or the `X-License-ID` one). An account with no
        such membership (first login, before it creates its license) costs a second query for the token alone.
        """
        from accounts.models import PersonalAccessToken

        if not token.startswith(settings.HELPDESK_TOKEN_PREFIX):
            return None
        try:
            uuid.UUID(account_id)
        except ValueError:
            return None
        token_hash = hash_token(token)
        found = _caller(token_hash, wanted_license)
        if found is not None:
            pat, agent = found
        else:
            agent = None
            pat = (
                PersonalAccessToken.objects.select_related("account")
                .filter(token_hash=token_hash, revoked_at__isnull=True)
                .first()
            )
            if pat is None:
                return None
        if not hmac.compare_digest(str(pat.account_id), account_id.lower()):
            return None
        if not pat.account.is_active or MIN_SCOPE not in pat.scopes:
            return None
        return pat, agent

    @staticmethod
    def _touch(pat) -> None:
        now = timezone.now()
        if pat.last_used_at is None or now - pat.last_used_at >= LAST_USED_RESOLUTION:
            type(pat).objects.filter(pk=pat.pk).update(last_used_at=now)
            pat.last_used_at = now


# --- the caller's query ----------------------------------------------------------------------------------
# Every API request runs it, so it is SQL written once rather than an ORM query compiled per request (the
# compilation of its three joins cost more CPU than the query itself). The columns come from the models, and
# the rows become model instances the way the ORM's compiler makes them (the backend's and the fields'
# converters, then Model.from_db).


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
    select = columns("a", Agent) + columns("l", License) + columns("c", Account)
    select += [f'p."{field.column}"' for field in pat_fields]
    sql = f"""
        SELECT {", ".join(select)}
        FROM {Agent._meta.db_table} a
        JOIN {Account._meta.db_table} c ON c.id = a.account_id
        JOIN {PersonalAccessToken._meta.db_table} p ON p.account_id = a.account_id
        JOIN {License._meta.db_table} l ON l.id = a.license_id
        WHERE p.token_hash = %(hash)s AND p.revoked_at IS NULL AND a.status = %(active)s
          AND (%(license)s::bigint IS NULL OR a.license_id = %(license)s::bigint)
        ORDER BY a.created_at, a.id
        LIMIT 1"""
    if vendor != "postgresql":
        sql = sql.replace("::bigint", "")
    loaders = [
        (model, [field.attname for field in model._meta.concrete_fields], [
            _converters(field) for field in model._meta.concrete_fields
        ])
        for model in (Agent, License, Account)
    ]  # fmt: skip
    return sql, loaders, [_converters(field) for field in pat_fields]


def _load(model, attnames, converters, values):
    values = [_convert(converter, value) for converter, value in zip(converters, values, strict=True)]
    return model.from_db(connection.alias, attnames, values)


def _caller(token_hash: str, wanted_license: int | None):
    """(token, agent with its license and account) for an unrevoked token with an active membership."""
    from accounts.models import STATUS_ACTIVE, PersonalAccessToken

    sql, loaders, pat_converters = _caller_query(connection.vendor)
    with connection.cursor() as cursor:
        cursor.execute(sql, {"hash": token_hash, "active": STATUS_ACTIVE, "license": wanted_license})
        row = cursor.fetchone()
    if row is None:
        return None
    instances, start = [], 0
    for model, attnames, converters in loaders:
        instances.append(_load(model, attnames, converters, row[start : start + len(attnames)]))
        start += len(attnames)
    agent, license, account = instances
    agent.license, agent.account = license, account
    pat_id, scopes, last_used_at = (
        _convert(converters, value) for converters, value in zip(pat_converters, row[start:], strict=True)
    )
    pat = PersonalAccessToken(
        id=pat_id, account=account, token_hash=token_hash, scopes=scopes, last_used_at=last_used_at
    )
    return pat, agent

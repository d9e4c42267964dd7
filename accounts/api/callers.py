"""The API caller kept per process: what authentication resolved from a credential (the token's agent, license and
account), reused while two versions in the cache say nothing it holds has changed.

Every API request resolves its caller (accounts.api.authentication). A warm request finds the resolved rows in
this process's copy and checks them against the versions of the caller's **account** and **license**, read in
the same Redis round trip as the rate limit's count (helpdesk.api.ratelimit.count_and_read): no statement for the
caller, and no second round trip. The versions are helpdesk.versioned's: a random value in the cache, dropped by
every change (now, and again after its commit) and drawn anew, BEFORE the rows are read, by the next reader.

What drops them, from the model layer (receivers connected at ready(), so no service, admin page or command can
forget it; `QuerySet.update()` sends no signal, and no code updates these tables that way except the token's
`last_used_at`, which the copy does not serve from the database):

| a save or delete of | drops the version of |
|---|---|
| Account (deactivated, password, any field) | that account |
| PersonalAccessToken (revoked, scopes, deleted) | its account |
| Agent (roles, status, removed, moved) | its account |
| OAuth AccessToken (issued, revoked, deleted) | its user's account |
| License (settings, languages, flags, default team, deleted) | that license |
| LicenseApp (scopes, deleted), OAuth Application (name, deleted) | the app's license |

A license's deletion deletes its agents (each drops its account's version) and the license's own version.
What no version can say, the request checks itself: an OAuth access token's expiry, at the moment of the request.

The first request of a credential in a process reads the database and remembers which license it resolved to;
the second draws both versions, then reads (a copy stored under versions drawn after its read could hide a change
made in between); from the third on, the copy serves. A copy older than HELPDESK_CALLER_CACHE_SECONDS is read
again (it bounds what a drop lost while Redis was unreachable to a writer, but reachable to readers, could
hide). Redis away: no version can be drawn, every request reads the database (correct, slower).
Measured: bench/README.md, "Issue 34: the caller cached".
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS
from django.db.models import JSONField
from django.db.models.base import ModelState
from django.db.models.signals import post_delete, post_init, post_save, pre_init

from helpdesk.api import ratelimit
from helpdesk.versioned import VersionedCopies

ACCOUNTS = VersionedCopies("caller:account", by_license=False)
LICENSES = VersionedCopies("caller:license", by_license=False)  # read in the rate limit's EVAL
VERSION_TTL_SECONDS = 24 * 3600  # an idle caller's version may go: the next request draws a new one
MOST = 10_000  # credentials held per process


@dataclass(slots=True)
class _Entry:
    value: object  # what the scheme's `load` returned
    account_id: object
    license_id: int | None
    token_key: str  # its rate-limit bucket (ratelimit.rate_limit_key)
    versions: list[str] | None  # the versions it was read under; None: not yet (the next request draws them)
    until: float  # time.monotonic() past which it is read again


_local: dict[tuple, _Entry] = {}


def resolve(request, key: tuple, load: Callable[[], tuple | None]):
    """The caller for credential `key`: from this process's copy while its versions are current, else `load()`.

    `load()` reads the database: None (not a caller: nothing kept) or (value, account ID, license ID or None,
    the token's rate-limit key). A warm request's rate-limit count is made with the versions' read and kept on
    the request (`ratelimit.keep`), so the throttle does not count it again.
    """
    entry = _local.get(key)
    state, versions = ratelimit.NOT_COUNTED, None
    if entry is not None:
        state, versions = ratelimit.count_and_read(
            ratelimit.buckets_of(entry.token_key, entry.license_id),
            _version_keys(entry.account_id, entry.license_id),
            _fresh(entry.license_id),
            VERSION_TTL_SECONDS,
        )
        if versions is not None and versions == entry.versions and time.monotonic() < entry.until:
            ratelimit.keep(request, state)
            return entry.value
    found = load()
    if found is None:
        _local.pop(key, None)
        return None
    value, account_id, license_id, token_key = found
    same = entry is not None and (entry.account_id, entry.license_id, entry.token_key) == found[1:]
    if same:  # counted (or the cache found away) in the buckets this caller counts in
        ratelimit.keep(request, state)
    if entry is not None and versions is None:
        # The cache is away: a drop made meanwhile may be lost, so no copy of before is kept (nor this one).
        _local.clear()
        return value
    if len(_local) >= MOST:
        _local.clear()
    seconds = settings.HELPDESK_CALLER_CACHE_SECONDS
    # Versions drawn before this read vouch for it; otherwise the next request draws them (then reads again).
    _local[key] = _Entry(
        value, account_id, license_id, token_key, versions if same else None, time.monotonic() + seconds
    )
    return value


def forget() -> None:
    """Drop this process's copies (tests that change rows behind the models' backs)."""
    _local.clear()


def _version_keys(account_id, license_id) -> list[str]:
    keys = [ACCOUNTS.key.format(account_id)]
    if license_id is not None:
        keys.append(LICENSES.key.format(license_id))
    return keys


def _fresh(license_id) -> list[str]:
    """A value for each version key that has none: random, so a value never comes back after a flush."""
    token = os.urandom(12).hex()
    return [f"{token}a"] if license_id is None else [f"{token}a", f"{token}l"]


# --- copies of model rows ---------------------------------------------------------------------------------
# A request gets its own instances (code may set attributes on `request.license`), with JSON values of its own,
# so no request sees another's changes to a dict: a flat one (a dict or list of strings, numbers, booleans,
# nulls: roles, settings, flags, languages, scopes) is copied, a nested one kept as text and decoded anew.
# Measured (bench/README.md, "Issue 34: the caller cached"): decoding all nine per request cost ~25 us.

_SCALARS = (str, int, float, bool, type(None))


@functools.cache
def _layout(model) -> tuple[tuple[str, ...], tuple[tuple[int, JSONField], ...]]:
    if pre_init.has_listeners(model) or post_init.has_listeners(model):  # `restore` skips `__init__`
        raise ImproperlyConfigured(f"{model.__name__} has init signals: the caller's copies skip them")
    fields = model._meta.concrete_fields
    return tuple(field.attname for field in fields), tuple(
        (i, field) for i, field in enumerate(fields) if isinstance(field, JSONField)
    )


def _flat(value) -> bool:
    if isinstance(value, dict):
        return all(isinstance(item, _SCALARS) for item in value.values())
    return isinstance(value, list) and all(isinstance(item, _SCALARS) for item in value)


def snapshot(instance) -> tuple:
    """The instance's column values, and how each JSON one is made anew for a request."""
    model = type(instance)
    attnames, jsons = _layout(model)
    values = [instance.__dict__[name] for name in attnames]
    fresh = []
    for i, field in jsons:
        value = values[i]
        if _flat(value):
            values[i] = type(value)(value)  # a copy of its own, which no request holds
            fresh.append((i, type(value)))
        else:
            values[i] = json.dumps(value, cls=field.encoder)
            fresh.append((i, functools.partial(json.loads, cls=field.decoder)))
    return model, tuple(values), tuple(fresh)


def restore(copy: tuple):
    """A new instance from `snapshot`'s values, as `Model.from_db` makes one (without `__init__`'s per-field
    loop; `_layout` refuses a model with init signals)."""
    model, values, fresh = copy
    if fresh:
        values = list(values)
        for i, make in fresh:
            values[i] = make(values[i])
    instance = model.__new__(model)
    instance.__dict__.update(zip(_layout(model)[0], values, strict=True))
    state = instance._state = ModelState()
    # The rows were read on `django.db.connection`, whose alias is DEFAULT_DB_ALIAS: named, not asked of the
    # proxy (a thread-local lookup per instance, four per request). Measured (bench/README.md, "Issue 34: the
    # inbox within twice its floor"; bench/cpu.py --instructions, 20k set): the inbox 3.41 M -> 3.34 M.
    state.adding, state.db = False, DEFAULT_DB_ALIAS
    return instance


# --- what drops the versions ------------------------------------------------------------------------------


def _dropping(versions, field: str) -> Callable:
    """A receiver that drops `versions` (ACCOUNTS or LICENSES) of the instance's `field`."""

    def dropped(sender, instance, **kwargs):
        ident = getattr(instance, field)
        if ident is not None:
            versions.changed(ident)

    return dropped


def _account_of(field: str) -> Callable:
    return _dropping(ACCOUNTS, field)


def _license_of(field: str) -> Callable:
    return _dropping(LICENSES, field)


def _application_changed(sender, instance, **kwargs):
    from accounts.models import LicenseApp

    for license_id in LicenseApp.objects.filter(application_id=instance.pk).values_list(
        "license_id", flat=True
    ):
        LICENSES.changed(license_id)


def connect() -> None:
    """Connected by AccountsConfig.ready()."""
    from oauth2_provider.models import get_access_token_model, get_application_model

    from accounts.models import Account, Agent, License, LicenseApp, PersonalAccessToken

    receivers = [
        (Account, _account_of("pk")),
        (PersonalAccessToken, _account_of("account_id")),
        (Agent, _account_of("account_id")),
        (get_access_token_model(), _account_of("user_id")),
        (License, _license_of("pk")),
        (LicenseApp, _license_of("license_id")),
        (get_application_model(), _application_changed),
    ]
    for model, receiver in receivers:
        for signal in (post_save, post_delete):
            signal.connect(
                receiver, sender=model, weak=False, dispatch_uid=f"callers.{model.__name__}.{signal}"
            )

"""CORS for browser integrations: allowed origins are those of registered apps' redirect URIs.

django-cors-headers asks `origin_allowed` (its `check_request_enabled` signal) for every cross-origin
request to `CORS_URLS_REGEX`; the set of origins is cached and forgotten whenever an app changes.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

CACHE_KEY = "oauth:cors-origins"
CACHE_SECONDS = 300


def origin_of(uri: str) -> str:
    parts = urlsplit(uri)
    default_port = {"http": 80, "https": 443}.get(parts.scheme)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port and parts.port != default_port else ""
    return f"{parts.scheme}://{host}{port}"


def _load_origins() -> frozenset[str]:
    from accounts.oauth.models import LicenseApp

    origins = set()
    for uris in LicenseApp.objects.values_list("application__redirect_uris", flat=True):
        origins.update(origin_of(uri) for uri in uris.split())
    return frozenset(origins)


def allowed_origins() -> frozenset[str]:
    origins = cache.get(CACHE_KEY)
    if origins is None:
        origins = _load_origins()
        cache.set(CACHE_KEY, origins, CACHE_SECONDS)
    return origins


def forget_origins() -> None:
    cache.delete(CACHE_KEY)


def forget_origins_on_commit() -> None:
    """Now (this request sees its change) and after the commit (no reader re-cached the old set between)."""
    forget_origins()
    transaction.on_commit(forget_origins)


def origin_allowed(sender, request, **kwargs) -> bool:
    # The library asks this signal for the path as well as the origin: both must hold.
    if not re.match(settings.CORS_URLS_REGEX, request.path_info):
        return False
    origin = request.headers.get("Origin", "")
    return bool(origin) and origin in allowed_origins()

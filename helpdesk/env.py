"""Typed readers for settings that come from environment variables (and only from there)."""

import os

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default or [])
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_header(name: str, default: tuple[str, str] | None = None) -> tuple[str, str] | None:
    """A request header and the value it must have, written `Header-Name: value` (e.g.
    `X-Forwarded-Proto: https`), as Django's WSGI META key and value: ("HTTP_X_FORWARDED_PROTO", "https").
    Empty: None (no header is trusted)."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    if not raw.strip():
        return None
    header, sep, value = raw.partition(":")
    if not sep or not header.strip() or not value.strip():
        raise ImproperlyConfigured(f"{name} must look like 'X-Forwarded-Proto: https', got {raw!r}")
    return "HTTP_" + header.strip().upper().replace("-", "_"), value.strip()

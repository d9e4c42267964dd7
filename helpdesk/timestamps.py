"""The contract's timestamp form, shared by the output, the services and the API renderer."""

from __future__ import annotations

import datetime


def iso(value: datetime.datetime | None) -> str | None:
    """The contract's timestamp form: UTC, milliseconds, `Z` (2026-04-30T22:02:08.901Z)."""
    if value is None:
        return None
    value = value.astimezone(datetime.UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"

"""Small read-only renderings shared by the admins."""

from __future__ import annotations

import json

from django.utils.html import format_html, format_html_join


def key_values(data: dict | None):
    """A JSON object as a compact definition list (flags, source, settings shown read-only)."""
    if not data:
        return "—"
    return format_html(
        "<dl class='hd-kv'>{}</dl>",
        format_html_join("", "<dt>{}</dt><dd>{}</dd>", ((k, _plain(v)) for k, v in data.items())),
    )


def _plain(value) -> str:
    if value in ("", None):
        return "—"
    return value if isinstance(value, str) else json.dumps(value)


def pretty_json(data) -> str:
    return format_html("<pre class='hd-json'>{}</pre>", json.dumps(data, indent=2, sort_keys=True))

"""The ticket page's conversation: the ticket's events (tickets.events_output, the API's own builder) rendered
as a thread — who, when, the text, attachments with links that download, and the changes in between.

A constant number of queries whatever the length of the thread: the events in one, then the names of the
teams, tags and agents that relation events mention, one query per kind that occurs.

A message's HTML is shown (sanitized again here, whatever stored it) without its remote images: an image
from the sender's server tells them when, where and that the mail was read (a tracking pixel). Each is left
as its alt text until the agent asks to see them (`?images=show` on the ticket page). The stored message
stays as it was received.
"""

from __future__ import annotations

import datetime
from types import SimpleNamespace

import nh3
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from accounts.attachments import signed_attachment_url
from accounts.models import Agent, Team
from tickets.events_output import events_by_ticket
from tickets.models import PRIORITY_LABELS, Tag

_RELATED = {"teams": Team, "tags": Tag, "followers": Agent}
_URL_SCHEMES = nh3.ALLOWED_URL_SCHEMES | {"cid"}
_REMOTE = ("http:", "https:", "//")


def display_html(html: str, *, show_images: bool) -> tuple[str, int]:
    """The message's HTML for the page, and how many remote images were left out of it."""
    hidden = 0

    def keep(tag: str, attribute: str, value: str) -> str | None:
        nonlocal hidden
        remote = tag == "img" and attribute in ("src", "srcset") and value.strip().lower().startswith(_REMOTE)
        if remote and not show_images:
            hidden += attribute == "src"
            return None
        return value

    cleaned = nh3.clean(html, url_schemes=_URL_SCHEMES, attribute_filter=keep)
    return cleaned, hidden


def _names(license_id, events) -> dict[str, dict[str, str]]:
    wanted: dict[str, set] = {}
    for event in events:
        if event["type"] in _RELATED:
            change = event[event["type"]]
            wanted.setdefault(event["type"], set()).update(change["added"], change["removed"])
    names = {}
    for kind, ids in wanted.items():
        rows = _RELATED[kind].objects.filter(license_id=license_id, pk__in=ids)
        names[kind] = {str(obj.pk): str(obj) for obj in rows}
    return names


def _side(side) -> str:
    parts = [side[key]["name"] for key in ("team", "agent") if side.get(key)]
    return " / ".join(parts) or "nobody"


def summary(event, names) -> str:
    """One line for a change (not a message)."""
    kind = event["type"]
    change = event.get(kind)
    if kind in ("status", "silo"):
        return f"{kind}: {change['old']} → {change['new']}"
    if kind == "priority":
        old, new = (PRIORITY_LABELS.get(change[k], change[k]) for k in ("old", "new"))
        return f"priority: {old} → {new}"
    if kind == "assignment":
        return f"assignment: {_side(change['old'])} → {_side(change['new'])}"
    if kind in _RELATED:
        known = names.get(kind, {})
        parts = [f"+{known.get(i, i)}" for i in change["added"]] + [
            f"−{known.get(i, i)}" for i in change["removed"]
        ]
        return f"{kind}: {', '.join(parts)}"
    if kind == "merge":
        return f"merged ticket {change['childTicketID']} into this one"
    if kind == "unmerge":
        return f"ticket {change['childTicketID']} no longer merged into this one"
    if kind == "rating":
        comment = f" — {change['comment']}" if change.get("comment") else ""
        return f"rated {change['score']}{comment}"
    return kind


def render_conversation(ticket, *, show_images: bool = False) -> str:
    events = events_by_ticket(ticket.license_id, [ticket.pk])[ticket.pk]
    names = _names(ticket.license_id, events)
    items = []
    for event in events:
        item = {
            "event": event,
            "when": datetime.datetime.fromisoformat(event["date"].replace("Z", "+00:00")),
            "is_message": event["type"] == "message",
        }
        if item["is_message"]:
            # signed links: they work in any browser tab, whatever host the admin is served from
            item["attachments"] = [
                {**a, "url": signed_attachment_url(SimpleNamespace(token=a["token"], name=a["name"]))}
                for a in event["attachments"]
            ]
            html = (event["message"].get("richTextHtml") or "").strip()
            if html:
                cleaned, item["hidden_images"] = display_html(html, show_images=show_images)
                item["html"] = mark_safe(cleaned)  # noqa: S308 - nh3 cleaned it just now
        else:
            item["summary"] = summary(event, names)
        items.append(item)
    return render_to_string("admin/tickets/ticket/conversation.html", {"items": items})

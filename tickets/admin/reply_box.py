"""The ticket page's reply box: a canned response inserted by its shortcut, a macro applied with the reply, and
the page's version, so that a reply written against an older state of the ticket is refused with what changed
rather than sent blind (tickets.collisions, the check behind the API's If-Match → 409 `ticket_changed`).

What an agent may insert or apply is what the API lists to it: the license's canned responses (a normal agent's
limited to those of no team or of its teams) and macros (shared, and its own private ones).
"""

from __future__ import annotations

from django import forms
from django.db.models import Q
from django.http import Http404, JsonResponse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from accounts.admin.tenancy import admin_agent
from accounts.models import TeamMembership
from tickets import collisions, placeholders
from tickets.admin.conversation import summary
from tickets.canned_responses.models import CannedResponse
from tickets.macros.models import PRIVATE, SHARED, Macro

MAX_SHORTCUTS_LISTED = 500


def canned_responses_for(license_id, agent):
    queryset = CannedResponse.objects.filter(license_id=license_id)
    if agent is None or agent.is_owner:
        return queryset
    teams = TeamMembership.objects.filter(agent=agent).values("team_id")
    return queryset.filter(Q(team__isnull=True) | Q(team_id__in=teams))


def macros_for(license_id, agent):
    mine = Q(visibility=PRIVATE, agent=agent) if agent is not None else Q(pk__in=[])
    return Macro.objects.filter(license_id=license_id).filter(Q(visibility=SHARED) | mine).order_by("name")


class ShortcutWidget(forms.TextInput):
    """A shortcut box with its list of shortcuts and an Insert button; the script puts the rendered canned
    response at the reply box's cursor (Enter in the box does the same)."""

    def __init__(self, *, url: str, shortcuts: list[str]):
        super().__init__(attrs={"list": "canned-shortcuts", "placeholder": "shortcut", "autocomplete": "off"})
        self.url, self.shortcuts = url, shortcuts

    def render(self, name, value, attrs=None, renderer=None):
        box = super().render(name, "", attrs, renderer)
        options = format_html_join("", '<option value="{}">', ((s,) for s in self.shortcuts))
        return format_html(
            '{}<datalist id="canned-shortcuts">{}</datalist> '
            '<button type="button" class="button" id="insert-canned" data-url="{}">Insert</button>'
            ' <span id="canned-error" class="errornote" style="display: none"></span>'
            "<script>{}</script>",
            box,
            options,
            self.url,
            mark_safe(_SCRIPT),  # noqa: S308 - a constant of this module
        )


_SCRIPT = """
(function () {
  var box = document.getElementById("id_canned_shortcut");
  var button = document.getElementById("insert-canned");
  var error = document.getElementById("canned-error");
  function insert() {
    var reply = document.getElementById("id_reply");
    var url = button.dataset.url + "?shortcut=" + encodeURIComponent(box.value.trim());
    fetch(url, {credentials: "same-origin"}).then(function (r) { return r.json().then(function (b) { return [r, b]; }); })
      .then(function (pair) {
        if (!pair[0].ok) { error.textContent = pair[1].error; error.style.display = "inline-block"; return; }
        error.style.display = "none";
        var at = reply.selectionStart || 0;
        reply.value = reply.value.slice(0, at) + pair[1].text + reply.value.slice(reply.selectionEnd || at);
        box.value = "";
        reply.focus();
      });
  }
  button.addEventListener("click", insert);
  box.addEventListener("keydown", function (e) { if (e.key === "Enter") { e.preventDefault(); insert(); } });
})();
"""


def reply_fields(request, ticket, url: str) -> dict:
    """The reply box's extra form fields for `ticket`: the shortcut box, the macro choice, the page's version."""
    agent = admin_agent(request, ticket.license_id)
    shortcuts = sorted(
        {
            shortcut
            for row in canned_responses_for(ticket.license_id, agent).values_list("shortcuts", flat=True)[
                :MAX_SHORTCUTS_LISTED
            ]
            for shortcut in row
        },
        key=str.lower,
    )
    return {
        "canned_shortcut": forms.CharField(
            label="Canned response",
            required=False,
            widget=ShortcutWidget(url=url, shortcuts=shortcuts),
            help_text="Type a shortcut and press Enter: the response, filled for this ticket, goes into the reply.",
        ),
        "macro": forms.ModelChoiceField(
            macros_for(ticket.license_id, agent),
            required=False,
            label="Apply macro",
            help_text="Its actions are applied when you save, with your reply.",
        ),
        "version": forms.IntegerField(
            required=False, widget=forms.HiddenInput, initial=collisions.version(ticket.updated_at)
        ),
    }


def canned_response_json(request, ticket):
    """`?shortcut=` → `{text}`: the canned response filled for `ticket`, signed by the agent (or a 404 error)."""
    shortcut = request.GET.get("shortcut", "").strip().lower()
    agent = admin_agent(request, ticket.license_id)
    if not shortcut:
        raise Http404
    # roles-like JSON lists: their text holds the quoted shortcut on PostgreSQL and SQLite alike
    candidates = canned_responses_for(ticket.license_id, agent).filter(shortcuts__icontains=f'"{shortcut}"')
    for canned in candidates.order_by("created_at"):
        if shortcut in (s.lower() for s in canned.shortcuts):
            text, _html = placeholders.render(text=canned.text, ticket=ticket, agent=agent)
            return JsonResponse({"text": text})
    return JsonResponse({"error": f"No canned response has the shortcut '{shortcut}'."}, status=404)


def event_line(event: dict) -> str:
    """One event the writer had not seen, in a line: who did what."""
    author = (event.get("author") or {}).get("name") or (event.get("author") or {}).get("type", "")
    if event["type"] == "message":
        text = " ".join((event["message"].get("text") or "").split())
        return f"{author} wrote “{text[:80]}{'…' if len(text) > 80 else ''}”"
    return f"{author}: {summary(event, {})}"

"""The public pages that our e-mails link to (no API token needed): accepting an invitation, confirming a
reply address and rating a solved ticket. GET only shows what the link is about; the change is a POST of the page's form (CSRF
protected), so a mail scanner that follows links changes nothing.
"""

from __future__ import annotations

from django.core import signing
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_http_methods

from helpdesk.api.errors import api_exception
from helpdesk.context import EMAIL_MESSAGE, Actor, acting_as
from helpdesk.errors import DomainError
from templates_app import invitations, rating, reply_addresses
from templates_app.models import Invitation

TEMPLATE = "templates_app/page.html"


def _error(request, title: str, exc: DomainError | str, status: int | None = None):
    if isinstance(exc, str):
        message, code = exc, status or 400
    else:  # a service's refusal: its message, with the status the API gives it
        message, code = exc.message, status or api_exception(exc).status_code
    return render(request, TEMPLATE, {"title": title, "error": message}, status=code)


def _pending_invitation(token: str) -> Invitation | None:
    try:
        invitation_id = invitations._signer().unsign(token, max_age=invitations.max_age())
    except signing.BadSignature:
        return None
    return (
        Invitation.objects.select_related("agent", "license")
        .filter(pk=invitation_id, accepted_at__isnull=True, revoked_at__isnull=True)
        .first()
    )


@require_http_methods(["GET", "POST"])
def invitation_accept_page(request):
    title = "Accept the invitation"
    token = (request.POST.get("token") if request.method == "POST" else request.GET.get("token")) or ""
    if request.method == "GET":
        invitation = _pending_invitation(token)
        if invitation is None:
            return _error(
                request, title, "This invitation link is not valid, was used already or has expired."
            )
        company = (invitation.license.settings or {}).get("companyName") or "a team"
        return render(
            request,
            TEMPLATE,
            {
                "title": title,
                "form": "invitation",
                "token": token,
                "intro": f"You are invited to join {company} on HelpDesk as {invitation.agent.email}.",
            },
        )
    password = request.POST.get("password") or None
    if password is not None and password != request.POST.get("password_again"):
        return _error(request, title, "The two passwords differ.")
    caller = request.user if request.user.is_authenticated else None
    try:
        agent, api_token = invitations.invitation_accept(token=token, password=password, caller=caller)
    except DomainError as exc:
        return _error(request, title, exc)
    return render(
        request,
        TEMPLATE,
        {
            "title": "Welcome",
            "done": f"You are now an agent of this help desk ({agent.email}).",
            "api_token": api_token,
            "admin_login": password is not None,
            "invited": True,
        },
    )


@require_http_methods(["GET", "POST"])
def reply_address_verify_page(request):
    title = "Confirm the reply address"
    token = (request.POST.get("token") if request.method == "POST" else request.GET.get("token")) or ""
    try:
        if request.method == "GET":
            address = reply_addresses.address_from_token(token)
        else:
            address = reply_addresses.reply_address_verify(token=token)
    except DomainError as exc:
        return _error(request, title, exc)
    if request.method == "GET" and not address.verified:
        company = (address.license.settings or {}).get("companyName") or "A team"
        intro = f"{company} wants to send its help-desk replies from {address.email}."
        return render(
            request, TEMPLATE, {"title": title, "form": "replyAddress", "token": token, "intro": intro}
        )
    return render(
        request, TEMPLATE, {"title": title, "done": f"{address.email} is confirmed as a reply address."}
    )


@require_http_methods(["GET", "POST"])
def rating_page(request):
    """GET: the choice of the link pre-selected, a comment box, a submit button. POST: the rating is
    recorded (a second POST changes it: one rating per ticket)."""
    from tickets import services as ticket_services
    from tickets.models import Ticket

    title = "Rate our help"
    token = (request.POST.get("token") if request.method == "POST" else request.GET.get("token")) or ""
    found = rating.read_token(token)
    ticket = Ticket.objects.filter(pk=found[0]).first() if found else None
    if ticket is None or ticket.is_read_only:
        return _error(request, title, "This rating link is not valid or has expired.", status=404)
    context = {"title": title, "form": "rating", "token": token, "ticket": ticket}
    if request.method == "GET":
        context["score"] = found[1]  # the link the customer clicked, even over an earlier answer
        context["comment"] = ticket.rating_comment
        return render(request, TEMPLATE, context)
    score = request.POST.get("score") or ""
    comment = (request.POST.get("comment") or "").strip()[:5000]
    if score not in rating.SCORES:
        return _error(request, title, "Choose good or bad.")
    if (score, comment) != (ticket.rating_score, ticket.rating_comment):  # a double submit writes nothing
        # The customer rates, through the link their e-mail carried (the event's author is the requester), on
        # this page: the event's source is `web`, not `email`.
        with acting_as(Actor(type=EMAIL_MESSAGE, email=ticket.requester_email, source="web")):
            ticket_services.ticket_rate(ticket=ticket, score=score, comment=comment)
    return render(request, TEMPLATE, {"title": title, "done": "Thank you: your rating is recorded."})


urlpatterns = [
    path("invitations/accept", invitation_accept_page, name="invitation-accept-page"),
    path("replyAddresses/verify", reply_address_verify_page, name="reply-address-verify-page"),
    path("ratings", rating_page, name="rating-page"),
]

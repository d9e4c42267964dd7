"""A contact form's public page, `/forms/<ID>` (GET: the form; POST: a ticket, then the thanks page), and its
embed script, `/forms/<ID>/embed.js` (inserts the page as an iframe where the script tag is).

The page is plain HTML (labels, errors tied to their inputs with aria-describedby, no JavaScript needed). A
post with `Accept: application/json` gets JSON: 200 `{"status": "received"}`, or the contract's error shape
(400 with `details` per input, 404, 413, 429). What a post goes through: templates_app.contact_form_posts.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from helpdesk.api.middleware import client_ip
from templates_app import contact_form_posts as posts
from templates_app.contact_forms import HONEYPOT, TOKEN, page_fields, public_url
from templates_app.models import ContactForm

TEMPLATE = "templates_app/contact_form.html"
THANKS = "Thank you: we received your message and will answer by e-mail."
EXPIRED = "This page was open for too long: please check your answers and send the form again."


def _form_or_404(form_id) -> ContactForm:
    form = ContactForm.objects.select_related("license").filter(pk=form_id, active=True).first()
    if form is None:
        raise Http404("No such form.")
    return form


def _wants_json(request) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def _json_error(status: int, error: str, code: str, details=None, **headers) -> JsonResponse:
    response = JsonResponse({"error": error, "code": code, "details": details}, status=status)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def _inputs(form: ContactForm, data, errors: dict) -> list[dict]:
    """Every input of the page in order: the built-in ones, then the owner's; each with its answer so far and
    its errors (the template ties them with aria-describedby)."""
    built_in = [
        {"key": "name", "label": "Your name", "kind": "text", "required": True, "autocomplete": "name"},
        {"key": "email", "label": "Your e-mail", "kind": "email", "required": True, "autocomplete": "email"},
        {"key": "subject", "label": "Subject", "kind": "text", "required": True},
        {"key": "message", "label": "Message", "kind": "textarea", "required": True},
    ]
    kinds = {"singleLine": "text", "multiLine": "textarea", "date": "date", "url": "url", "number": "number"}
    inputs = list(built_in)
    for field in page_fields(form):
        custom = field["custom"]
        entry = {"key": field["key"], "label": field["label"], "required": field["required"]}
        if custom is None:
            entry["kind"] = field["type"]  # text, textarea, email
        elif custom.type == "dropdown":
            entry.update(kind="select", options=custom.options)
        elif custom.type == "checkbox":
            entry["kind"] = "checkbox"
        else:
            entry["kind"] = kinds[custom.type]
        inputs.append(entry)
    for entry in inputs:
        entry["limit"] = posts.LIMITS.get(entry["key"]) or posts.LIMITS.get(entry["kind"])
        value = data.get(entry["key"]) if data is not None else None
        entry["value"] = "" if value is None else str(value)
        entry["checked"] = entry["kind"] == "checkbox" and entry["value"].lower() in (
            "on",
            "true",
            "1",
            "yes",
        )
        entry["errors"] = errors.get(entry["key"], [])
    return inputs


def _page(request, form: ContactForm, *, data=None, errors=None, status=200, notice=""):
    errors = errors or {}
    context = {
        "title": form.name,
        "contact_form": form,
        "inputs": _inputs(form, data, errors),
        "token": posts.form_token(form),
        "honeypot": HONEYPOT,
        "token_name": TOKEN,
        "errors": errors,
        "attachment_errors": errors.get("attachments", []),
        "max_files": settings.CONTACT_FORM_MAX_FILES,
        "max_megabytes": posts.max_bytes() // (1024 * 1024),
        "notice": notice,
        "action": f"/forms/{form.pk}",
    }
    return render(request, TEMPLATE, context, status=status)


def _thanks(request, form: ContactForm):
    if _wants_json(request):
        return JsonResponse({"status": "received"})
    return render(request, TEMPLATE, {"title": form.name, "done": THANKS})


# The page is made to be embedded in other sites (an iframe), and posted to from them: Django's CSRF check
# (a cookie plus a matching input) cannot work in a third-party iframe whose cookies the browser blocks, and
# there is no session to protect (no one is signed in; a forged post only writes what anyone may write).
# The signed time token in the page does the job a CSRF token would for a bot: a post needs a page fetched
# between CONTACT_FORM_MIN_SECONDS and a day before (templates_app.contact_form_posts).
@csrf_exempt
@xframe_options_exempt
@require_http_methods(["GET", "POST"])
def contact_form_page(request, form_id):
    try:
        form = _form_or_404(form_id)
    except Http404:
        if request.method == "POST" and _wants_json(request):
            return _json_error(404, "Not found.", "not_found")
        return render(
            request, TEMPLATE, {"title": "Form not found", "error": "This form does not exist."}, status=404
        )
    if request.method == "GET":
        return _page(request, form)
    as_json = _wants_json(request)
    declared = int(request.META.get("CONTENT_LENGTH") or 0)
    if declared > posts.max_bytes() + 1024 * 1024:  # before the body is read (the fields' share: 1 MB)
        if as_json:
            return _json_error(413, "The post is too large.", "too_large")
        return _page(request, form, errors={"attachments": ["The files are too large."]}, status=413)
    try:
        if request.content_type == "application/json":
            data, files = posts.json_data(request.body), []
        else:
            data, files = request.POST, request.FILES.getlist("attachments")
        outcome = posts.contact_form_post(form=form, data=data, files=files, ip=client_ip(request))
    except posts.Refused as exc:
        if as_json:
            return _json_error(400, "The form has errors.", "invalid", exc.errors)
        return _page(request, form, data=request.POST, errors=exc.errors, status=400)
    if outcome.status == "limited":
        if as_json:
            return _json_error(
                429,
                "Too many posts: try again later.",
                "rate_limit_exceeded",
                Retry_After=str(outcome.retry_after),
            )
        response = render(
            request,
            TEMPLATE,
            {"title": form.name, "error": f"Too many messages: try again in {outcome.retry_after} seconds."},
            status=429,
        )
        response["Retry-After"] = str(outcome.retry_after)
        return response
    if outcome.status == "expired":
        if as_json:
            return _json_error(400, EXPIRED, "invalid", {TOKEN: [EXPIRED]})
        return _page(request, form, data=request.POST, status=400, notice=EXPIRED)
    return _thanks(request, form)  # received, or a bot's post (which must not learn that it was caught)


_EMBED = """(function () {
  var script = document.currentScript;
  var frame = document.createElement("iframe");
  frame.src = %(url)s;
  frame.title = %(title)s;
  frame.loading = "lazy";
  frame.style.cssText = "width:100%%;min-height:760px;border:0";
  script.parentNode.insertBefore(frame, script.nextSibling);
})();
"""


@require_GET
def contact_form_embed(request, form_id):
    """The embed snippet's script (the snippet: templates_app.contact_forms.embed_code)."""
    form = _form_or_404(form_id)
    # json.dumps gives JS string literals; "</" is escaped so that no value can close a <script> element
    values = {name: json.dumps(value).replace("</", "<\\/") for name, value in
              {"url": public_url(form), "title": form.name}.items()}  # fmt: skip
    response = HttpResponse(_EMBED % values, content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = "public, max-age=300"
    return response


urlpatterns = [
    path("forms/<uuid:form_id>", contact_form_page, name="contact-form-page"),
    path("forms/<uuid:form_id>/embed.js", contact_form_embed, name="contact-form-embed"),
]

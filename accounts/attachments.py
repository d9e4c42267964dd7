"""Attachment downloads: the `url` every attachment carries, its signed and expiring variant, and the view that
serves both (`GET /v1/attachments/{token}/{name}`).

Files are never served from a public path (nothing serves MEDIA_URL): a download names the attachment's token
(random, 192 bits) and its name, and is allowed

* with API credentials of the attachment's license (the caller's license, as every API read; an OAuth token
  needs a `tickets` scope, as every route checks), or
* with a `?sig=` that `signed_attachment_url()` made (django.core.signing, expiring after
  HELPDESK_ATTACHMENT_LINK_MAX_AGE_SECONDS, 7 days by default): what an e-mail or an `<img>` carries, or
* in a browser signed in to the admin as a staff member of the license (or a superuser).

Another license's token, a wrong name or a forged signature is a 404, like a token that does not exist.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from urllib.parse import quote

from django.conf import settings
from django.core import signing
from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotAuthenticated, NotFound, PermissionDenied
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.views import APIView

from accounts.models import Attachment
from helpdesk.api.permissions import CredentialsOptional

DEFAULT_LINK_MAX_AGE_SECONDS = 7 * 24 * 3600
_SALT = "helpdesk.attachment-download"
# Shown inline (an <img>, a browser tab): raster images only. SVG can carry script, so it is a download too.
INLINE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/bmp"}
# The stored type is what the uploader declared; anything that is not a plain `type/subtype` is sent as bytes.
_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}")


def link_max_age() -> int:
    return int(getattr(settings, "HELPDESK_ATTACHMENT_LINK_MAX_AGE_SECONDS", DEFAULT_LINK_MAX_AGE_SECONDS))


def download_url(token: str, name: str) -> str:
    """The absolute download URL (HELPDESK_APP_URL) of the attachment with this token and name."""
    return f"{settings.HELPDESK_APP_URL.rstrip('/')}/v1/attachments/{quote(token, safe='')}/{quote(name, safe='')}"


def attachment_url(attachment: Attachment) -> str:
    """The attachment's `url`: downloads with the caller's credentials."""
    return download_url(attachment.token, attachment.name)


def _signer() -> signing.TimestampSigner:
    return signing.TimestampSigner(salt=_SALT)


def signed_attachment_url(attachment: Attachment) -> str:
    """The `url` with a signature that lets anyone holding it download the file until it expires (e-mails,
    `<img>`): valid for HELPDESK_ATTACHMENT_LINK_MAX_AGE_SECONDS from now."""
    _, signature = _signer().sign(attachment.token).split(":", 1)  # "<timestamp>:<signature>"
    return f"{attachment_url(attachment)}?sig={quote(signature, safe='')}"


def signature_valid(token: str, sig: str) -> bool:
    """True for a signature of this token that has not expired; PermissionDenied when it has expired."""
    try:
        _signer().unsign(f"{token}:{sig}", max_age=link_max_age())
    except signing.SignatureExpired:
        raise PermissionDenied(
            "This attachment link has expired; ask for the ticket again.", code="attachment_link_expired"
        ) from None
    except signing.BadSignature:
        return False
    return True


def content_type_of(attachment: Attachment) -> str:
    declared = (attachment.content_type or "").strip().lower()
    return declared if _MEDIA_TYPE.fullmatch(declared) else "application/octet-stream"


def _console_may_see(user, license_id: int) -> bool:
    from accounts.admin.tenancy import admin_license_ids

    if user is None or not user.is_authenticated:
        return False
    allowed = admin_license_ids(SimpleNamespace(user=user))
    return allowed is None or license_id in allowed


class _IgnoreAccept(BaseContentNegotiation):
    """The file is the file whatever `Accept` says (an `<img>` asks for image/*); errors are JSON."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class AttachmentDownloadView(APIView):
    # API credentials pass the scope and role check of every route (a token must cover tickets); a signature
    # or the admin's session are decided in get().
    permission_classes = [CredentialsOptional]
    content_negotiation_class = _IgnoreAccept

    def initialize_request(self, request, *args, **kwargs):
        # The admin session's user, kept before DRF's authentication replaces `request.user` (API credentials).
        self.session_user = getattr(request, "user", None)
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(
        operation_id="attachment_download",
        parameters=[
            OpenApiParameter(
                "sig",
                str,
                required=False,
                description="The signature of a signed link (instead of credentials).",
            )
        ],
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY},
    )
    def get(self, request, token: str, name: str):
        attachment = Attachment.objects.filter(token=token).first()
        if attachment is None or attachment.name != name:
            raise NotFound()
        sig = request.query_params.get("sig")
        if sig is not None:
            if not signature_valid(token, sig):
                raise NotFound()
        elif getattr(request, "agent", None) is not None:  # API credentials (TokenBasicAuthentication)
            if request.license is None or request.license.pk != attachment.license_id:
                raise NotFound()
        elif _console_may_see(self.session_user, attachment.license_id):
            pass
        elif request.user is None and not getattr(self.session_user, "is_authenticated", False):
            raise NotAuthenticated()
        else:
            raise NotFound()
        return _file_response(attachment)


def _file_response(attachment: Attachment) -> FileResponse:
    try:
        handle = attachment.file.open("rb")
    except (FileNotFoundError, ValueError):
        raise NotFound() from None
    content_type = content_type_of(attachment)
    response = FileResponse(
        handle,
        content_type=content_type,
        as_attachment=content_type not in INLINE_TYPES,
        filename=attachment.name,  # FileResponse encodes it (RFC 6266 filename*=utf-8'') when it is not ASCII
    )
    response["X-Content-Type-Options"] = "nosniff"
    # Even a file opened in a tab cannot run script or load anything.
    response["Content-Security-Policy"] = (
        "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"
    )
    response["Cache-Control"] = "private, max-age=3600"
    response["Referrer-Policy"] = "no-referrer"
    return response

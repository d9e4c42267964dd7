"""One error shape for every layer: {"error": summary, "code": stable_code, "details": object|list|null}."""

from __future__ import annotations

import logging
import sys

from django.conf import settings
from django.core.exceptions import (
    ObjectDoesNotExist,
    PermissionDenied,
    RequestDataTooBig,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.utils import InterfaceError, OperationalError
from django.http import Http404, HttpResponse, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response

from helpdesk import errors as domain
from helpdesk.api import ratelimit
from helpdesk.logs import current_request_id

log = logging.getLogger(__name__)


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the current state of the resource."
    default_code = "conflict"

    def __init__(self, detail=None, code=None, details=None):
        super().__init__(detail, code)
        self.details = details


class PaymentRequired(exceptions.APIException):
    status_code = status.HTTP_402_PAYMENT_REQUIRED
    default_detail = "The payment was declined."
    default_code = "card_declined"


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


class BadRequest(exceptions.APIException):
    """A 400 with a chosen code and optional details (for checks outside serializers)."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "Invalid request."
    default_code = "invalid"

    def __init__(self, detail=None, code=None, details=None):
        super().__init__(detail, code)
        self.details = details


class ServiceUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "A service this operation depends on is unavailable; retry shortly."
    default_code = "unavailable"


def field_error(field: str, message: str, code: str = "invalid") -> BadRequest:
    return BadRequest(f"Invalid value for '{field}': {message}", code=code, details={field: [message]})


# Each kind of domain error (helpdesk.errors, raised by the services) and the HTTP exception it leaves as.
_DOMAIN_ERRORS = (
    (domain.Invalid, BadRequest),
    (domain.Forbidden, exceptions.PermissionDenied),
    (domain.NotFound, exceptions.NotFound),
    (domain.Conflict, Conflict),
    (domain.PaymentRequired, PaymentRequired),
    (domain.TooLarge, PayloadTooLarge),
    (domain.Unavailable, ServiceUnavailable),
)


def api_exception(exc: domain.DomainError) -> exceptions.APIException:
    """The HTTP exception for a service's refusal: its status, with the error's message, code and details."""
    http_class = next((http for kind, http in _DOMAIN_ERRORS if isinstance(exc, kind)), BadRequest)
    api = http_class(exc.message, code=exc.code)
    api.details = exc.details
    if exc.retry_after is not None:
        api.wait = exc.retry_after
    return api


_CODES = {
    400: "invalid",
    401: "not_authenticated",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "throttled",
    500: "server_error",
    503: "database_unavailable",
}

# The database cannot be reached (down, restarting, connection refused or cut): a 503 the client may retry.
DATABASE_ERRORS = (OperationalError, InterfaceError)
DATABASE_RETRY_AFTER_SECONDS = 5
_DATABASE_UNAVAILABLE = "The database is unavailable; retry shortly."


def database_unavailable(request=None, exc=None):
    """The 503 for a database outage: the error shape on the API, a plain page elsewhere (the admin)."""
    log.warning("Database unavailable: %s", exc)
    if request is not None and not request.path.startswith("/v1/"):
        response = HttpResponse(
            "503 Service Unavailable: the database is unavailable; retry shortly.\n",
            status=503,
            content_type="text/plain; charset=utf-8",
        )
    else:
        response = JsonResponse(error_body(503, _DATABASE_UNAVAILABLE, "database_unavailable"), status=503)
    response["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
    return response


def error_body(status_code: int, error: str, code: str | None = None, details=None) -> dict:
    if status_code >= 500 and details is None:
        # What an operator needs to find the request's log lines (the response's X-Request-ID header too).
        details = {"requestID": current_request_id()}
    return {"error": error, "code": code or _CODES.get(status_code, "error"), "details": details}


def _flatten_first(details) -> str:
    """A readable one-line summary of DRF's validation details, naming the field."""
    if isinstance(details, dict):
        for key, value in details.items():
            inner = _flatten_first(value)
            if key == "non_field_errors":
                return inner
            return f"{key}: {inner}" if not inner.startswith(f"{key}") else inner
    if isinstance(details, list) and details:
        return _flatten_first(details[0])
    return str(details)


def _plain(details):
    if isinstance(details, dict):
        return {str(key): _plain(value) for key, value in details.items()}
    if isinstance(details, list):
        return [_plain(value) for value in details]
    return str(details)


def exception_handler(exc, context):
    if isinstance(exc, domain.DomainError):
        exc = api_exception(exc)
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    elif isinstance(exc, TooManyFilesSent):
        exc = PayloadTooLarge(
            f"Too many files in one request (at most {settings.DATA_UPLOAD_MAX_NUMBER_FILES}).",
            code="too_many_files",
        )
    elif isinstance(exc, TooManyFieldsSent):
        exc = PayloadTooLarge(
            f"Too many fields in one request (at most {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS}).",
            code="too_many_fields",
        )
    elif isinstance(exc, ObjectDoesNotExist):
        # A row the view found and a service then locks can vanish in between (the purge deletes it): the
        # resource is gone, whichever model's DoesNotExist says so.
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoValidationError):
        details = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        exc = exceptions.ValidationError(details)
    if isinstance(exc, exceptions.APIException):
        # A request refused before the throttle ran (403) still counts; past the limit it is the 429.
        exc = ratelimit.for_error(exc, context.get("request") if context else None)

    if isinstance(exc, DATABASE_ERRORS):
        log.warning("Database unavailable: %s", exc)
        body = error_body(503, _DATABASE_UNAVAILABLE, "database_unavailable")
        return Response(body, status=503, headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)})
    if not isinstance(exc, exceptions.APIException):
        log.exception("Unhandled error in %s", context.get("view").__class__.__name__ if context else "?")
        return Response(error_body(500, "Internal server error."), status=500)

    headers = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None) is not None:
        headers["Retry-After"] = str(int(exc.wait) + (0 if float(exc.wait).is_integer() else 1))
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        # The view's challenge (Bearer for a Bearer caller) when it gave one, else Basic.
        headers.setdefault("WWW-Authenticate", 'Basic realm="helpdesk"')

    if isinstance(exc, exceptions.ValidationError):
        details = _plain(exc.detail)
        if isinstance(details, list):
            details = {"non_field_errors": details}
        body = error_body(400, f"Invalid request: {_flatten_first(details)}", "invalid", details)
    else:
        code = exc.get_codes() if isinstance(exc.get_codes(), str) else None
        body = error_body(exc.status_code, str(exc.detail), code, getattr(exc, "details", None))
    response = Response(body, status=exc.status_code, headers=headers)
    return response


def json_error(
    status_code: int, error: str, code: str | None = None, details=None, **headers
) -> JsonResponse:
    """For layers outside DRF (middleware, Django's 404/500 handlers on /v1)."""
    response = JsonResponse(error_body(status_code, error, code, details), status=status_code)
    for key, value in headers.items():
        response[key.replace("_", "-")] = value
    return response


def handler404(request, exception=None):
    return json_error(404, "Not found.")


def handler500(request):
    # Django calls it while handling the exception (outside DRF: middleware, the admin).
    exc = sys.exc_info()[1]
    if isinstance(exc, DATABASE_ERRORS):
        return database_unavailable(request, exc)
    return json_error(500, "Internal server error.")

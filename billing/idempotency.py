"""`Idempotency-Key` on charging requests: the same key replays the first response, another body is a 409.

Life of a key: `begin()` inserts the record (committed, so a concurrent twin sees it and gets 409
`idempotency_key_in_use`); the service writes the response into it in the same transaction as the change
it reports (`complete()`); `settle()` stores what the service did not (validation errors, 409s). A record whose
request reached the gateway (a charge intent points at it) stays open until the charge is finished, by the
request or by the reconciler, which then writes the response: a retry never re-executes a half-done charge.
"""

from __future__ import annotations

import hashlib
import json

import orjson
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.exceptions import APIException
from rest_framework.response import Response

from billing.api.serializers import SubscriptionSerializer
from billing.models import INTENT, IdempotencyRecord
from helpdesk.api.errors import BadRequest, Conflict, api_exception, exception_handler
from helpdesk.api.renderers import dumps
from helpdesk.errors import DomainError

HEADER = "HTTP_IDEMPOTENCY_KEY"
MAX_KEY_LENGTH = 255
# Answers about the moment, not about the request: a retry with the same key must be able to succeed.
TRANSIENT_CODES = {"charge_in_progress", "idempotency_key_in_use", "renewal_due"}


def _fingerprint(request) -> str:
    data = request.data if request.data not in (None, "") else {}
    try:
        payload = orjson.dumps([request.method, request.path, data], option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        # orjson refuses integers beyond 64 bits; the standard library writes them (the same body always
        # takes the same branch, so the fingerprint stays stable). Validation then answers the 400.
        payload = json.dumps(
            [request.method, request.path, data], sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode()
    return hashlib.sha256(payload).hexdigest()


def _key(request) -> str | None:
    key = request.META.get(HEADER)
    if key is None:
        return None
    key = key.strip()
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise BadRequest(
            "Invalid value for 'Idempotency-Key': 1 to 255 printable characters.",
            code="invalid",
            details={"Idempotency-Key": ["1 to 255 printable characters."]},
        )
    return key


def begin(request) -> IdempotencyRecord | Response | None:
    """The open record for this request, the first response to replay, or None without a key."""
    key = _key(request)
    if key is None:
        return None
    fingerprint = _fingerprint(request)
    try:
        with transaction.atomic():
            return IdempotencyRecord.objects.create(license=request.license, key=key, fingerprint=fingerprint)
    except IntegrityError:
        record = IdempotencyRecord.objects.get(license=request.license, key=key)
    if record.fingerprint != fingerprint:
        raise Conflict(
            "This Idempotency-Key was already used with other parameters; use a new key for a new request.",
            code="idempotency_key_reused",
        )
    if record.status is None:
        exc = Conflict(
            "A request with this Idempotency-Key is still being processed; retry shortly.",
            code="idempotency_key_in_use",
        )
        exc.wait = 1
        raise exc
    return Response(orjson.loads(record.body), status=record.status, headers={"Idempotent-Replayed": "true"})


def exception_body(exc: APIException | DomainError) -> dict:
    """The body the API's exception handler gives for `exc` (so a replay is byte-for-byte the same)."""
    return exception_handler(exc, {}).data


def complete_subscription(record: IdempotencyRecord | None, subscription, *, created: bool = False) -> None:
    """Store the subscription's response (201 when the request created it), inside the change's transaction."""
    complete(record, 201 if created else 200, SubscriptionSerializer(subscription).data)


def complete_error(record: IdempotencyRecord | None, error: DomainError) -> None:
    """Store a service's refusal as the API answers it (a declined charge's 402)."""
    exc = api_exception(error)
    complete(record, exc.status_code, exception_body(exc))


def complete(record: IdempotencyRecord | None, status: int, body) -> None:
    """Store the response; called inside the transaction that makes the change it reports."""
    if record is None:
        return
    IdempotencyRecord.objects.filter(pk=record.pk, status__isnull=True).update(
        status=status, body=dumps(body).decode(), completed_at=timezone.now()
    )


def settle(record: IdempotencyRecord | None, status: int | None, body=None, code: str | None = None) -> None:
    """After the request: keep its answer, or forget the key so that a retry runs again.

    `status` None means the request crashed. Kept open: records whose charge is still an intent.
    """
    if record is None:
        return
    record = IdempotencyRecord.objects.filter(pk=record.pk).first()
    if record is None or record.status is not None:
        return
    if record.charges.filter(status=INTENT).exists():
        return  # the reconciler finishes the charge and writes the response
    if status is None or status >= 500 or code in TRANSIENT_CODES:
        record.delete()
        return
    complete(record, status, body)

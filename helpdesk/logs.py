"""Request IDs and structured logs: one line per request, and every log line carries the request's context.

The context (request ID, license, account) lives in a ContextVar, set by `RequestLogMiddleware` for a request
and by the Celery signals (helpdesk/celery.py) for a task, so that any logger anywhere gets it through
`RequestContextFilter` without being passed anything. `LOG_FORMAT=json` renders one JSON object per line (for
log shippers); the default stays plain text for a terminal.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import json
import logging
import re
import time
import uuid

# The header a proxy or client may send (and that every response returns).
REQUEST_ID_HEADER = "X-Request-ID"
REQUEST_ID_MAX_LENGTH = 200

access_log = logging.getLogger("helpdesk.request")

_context: contextvars.ContextVar[dict | None] = contextvars.ContextVar("helpdesk_log_context", default=None)


def new_request_id() -> str:
    return uuid.uuid4().hex


def valid_request_id(value: str | None) -> str | None:
    """The client's request ID if it is safe to echo and log (printable ASCII, at most 200 characters)."""
    if value and len(value) <= REQUEST_ID_MAX_LENGTH and value.isascii() and value.isprintable():
        return value
    return None


def log_context() -> dict:
    return _context.get() or {}


def current_request_id() -> str | None:
    return log_context().get("requestID")


def bind(**fields) -> None:
    """Add fields (license, account) to the current context: authentication learns them mid-request."""
    current = _context.get()
    if current is not None:
        current.update(fields)


@contextlib.contextmanager
def logging_context(**fields):
    token = _context.set(dict(fields))
    try:
        yield
    finally:
        _context.reset(token)


class RequestContextFilter(logging.Filter):
    """Copies the current context onto every record (installed on the handlers, so on every logger's lines)."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = log_context()
        record.request_id = context.get("requestID") or "-"
        record.license = context.get("license")
        record.account = context.get("account")
        for field in ("task", "taskID"):
            if field in context and not hasattr(record, field):
                setattr(record, field, context[field])
        return True


class DropLoggedResponses(logging.Filter):
    """On `django.request`: drop Django's own line for a 4xx/5xx response (the access line already has it).

    A record with a traceback (an exception Django converted to a response) is kept: it says why.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not (hasattr(record, "status_code") and not record.exc_info)


class OncePer(logging.Filter):
    """Lets one record through per `seconds` (per logger name), for loggers that would repeat one error on every
    request during an outage (`helpdesk.cache`: every cache operation while Redis is away)."""

    # Logger name -> when its last record passed (monotonic); shared by the instances, reset by tests.
    last: dict[str, float] = {}
    clock = staticmethod(time.monotonic)

    def __init__(self, seconds: float = 30.0):
        super().__init__()
        self.seconds = seconds

    def filter(self, record: logging.LogRecord) -> bool:
        # logging.config.dictConfig adds a logger's filters without removing those it had (Celery's worker
        # configures logging again after Django did), so one record may meet several of these: the first
        # decides for all of them.
        decided = getattr(record, "_once_per", None)
        if decided is not None:
            return decided
        now = self.clock()
        passes = now - self.last.get(record.name, -self.seconds) >= self.seconds
        if passes:
            self.last[record.name] = now
        record._once_per = passes
        return passes


# Fields of the access line (and of a task's line) that the JSON output carries when present.
_EXTRA_FIELDS = ("method", "route", "status", "durationMs", "queries", "task", "taskID", "state")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.datetime.fromtimestamp(record.created, tz=datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "requestID": getattr(record, "request_id", None)
            if getattr(record, "request_id", "-") != "-"
            else None,
            "license": getattr(record, "license", None),
            "account": getattr(record, "account", None),
        }
        for field in _EXTRA_FIELDS:
            if hasattr(record, field):
                entry[field] = getattr(record, field)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"


def logging_config(log_format: str, level: str) -> dict:
    """settings.LOGGING for `LOG_FORMAT` (plain or json)."""
    formatter = {"()": "helpdesk.logs.JsonFormatter"} if log_format == "json" else {"format": PLAIN_FORMAT}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "context": {"()": "helpdesk.logs.RequestContextFilter"},
            "drop_logged_responses": {"()": "helpdesk.logs.DropLoggedResponses"},
            "once_per_30s": {"()": "helpdesk.logs.OncePer", "seconds": 30.0},
        },
        "formatters": {"default": formatter},
        "handlers": {
            "console": {"class": "logging.StreamHandler", "formatter": "default", "filters": ["context"]}
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            "django.db.backends": {"level": "WARNING"},
            "django.request": {"filters": ["drop_logged_responses"]},
            "helpdesk.cache": {"filters": ["once_per_30s"]},  # Redis errors turned into misses (settings)
        },
    }


_ROUTE_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)|<(?:\w+:)?(\w+)>")


def route_of(request) -> str | None:
    """The URL pattern that served the request (`/v1/agents/{agentID}`), never the raw path: IDs stay out."""
    match = getattr(request, "resolver_match", None)
    if match is None or match.route is None:
        return None
    route = _ROUTE_GROUP.sub(lambda m: "{" + (m.group(1) or m.group(2)) + "}", match.route)
    return "/" + route.replace("^", "").replace("$", "").replace("\\", "")


class _QueryCounter:
    def __init__(self):
        self.count = 0

    def __call__(self, execute, sql, params, many, context):
        self.count += 1
        return execute(sql, params, many, context)


class RequestLogMiddleware:
    """First in MIDDLEWARE: the request ID (taken or made), the context, and the one access line per request."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        from django.db import connections  # not at import time: settings import this module

        request_id = valid_request_id(request.headers.get(REQUEST_ID_HEADER)) or new_request_id()
        request.request_id = request_id
        counter = _QueryCounter()
        started = time.monotonic()
        with (
            logging_context(requestID=request_id, license=None, account=None),
            contextlib.ExitStack() as stack,
        ):
            for connection in connections.all(initialized_only=True) or [connections["default"]]:
                stack.enter_context(connection.execute_wrapper(counter))
            response = self.get_response(request)
            response[REQUEST_ID_HEADER] = request_id
            status = response.status_code
            route = route_of(request)
            duration_ms = round((time.monotonic() - started) * 1000, 1)
            level = logging.ERROR if status >= 500 else logging.WARNING if status >= 400 else logging.INFO
            access_log.log(
                level,
                "%s %s %s %sms %s queries",
                request.method,
                route or "-",
                status,
                duration_ms,
                counter.count,
                extra={
                    "method": request.method,
                    "route": route,
                    "status": status,
                    "durationMs": duration_ms,
                    "queries": counter.count,
                },
            )
        return response

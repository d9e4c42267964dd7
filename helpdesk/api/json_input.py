"""Limits on JSON input, shared by the parser (the whole body) and the free-form fields (customFields, ...).

Why here and not per endpoint: the standard library's parser recurses once per nesting level (50,000 levels
raise RecursionError, a 500), and PostgreSQL's jsonb refuses `\\u0000` and text refuses lone surrogates (a 500
on PostgreSQL, silently stored on SQLite). Every JSON body passes `check_json` once, iteratively.
"""

from __future__ import annotations

import codecs

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError
from rest_framework.utils import json

from helpdesk.api.errors import BadRequest

# A scalar's share of the size estimate (numbers, true/false/null, the punctuation around it).
_SCALAR_SIZE = 8
# What the renderer (orjson) and an idempotency fingerprint can write; no field of the API needs more.
_MIN_INT, _MAX_INT = -(2**63), 2**64 - 1


class JSONLimitError(ValueError):
    def __init__(self, message: str, path: str):
        super().__init__(message)
        self.message = message
        self.path = path


def _bad_text(text: str) -> str | None:
    if "\x00" in text:
        return "NUL characters (\\u0000) are not allowed."
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "Lone surrogates (\\ud800-\\udfff not in a pair) are not allowed."
    return None


def _path(parent: str, key) -> str:
    return f"{parent}.{key}" if parent else str(key)


def check_json(value, *, max_depth: int, max_size: int | None = None, path: str = "") -> int:
    """Raise JSONLimitError for nesting deeper than max_depth (a scalar is depth 0), an estimated size above
    max_size characters, a key or string with NUL or a lone surrogate, or an integer beyond 64 bits.
    Returns the estimated size."""
    size = 0
    stack = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            problem = _bad_text(item)
            if problem:
                raise JSONLimitError(problem, where)
            size += len(item) + 2
        elif isinstance(item, dict | list):
            if depth >= max_depth:
                raise JSONLimitError(f"Nested more than {max_depth} levels deep.", where)
            size += 2
            if isinstance(item, dict):
                for key, child in item.items():
                    problem = _bad_text(key)
                    if problem:
                        raise JSONLimitError(problem, _path(where, key.encode("utf-8", "replace").decode()))
                    size += len(key) + 3
                    stack.append((child, _path(where, key), depth + 1))
            else:
                for index, child in enumerate(item):
                    stack.append((child, _path(where, index), depth + 1))
        else:
            if isinstance(item, int) and not _MIN_INT <= item <= _MAX_INT:
                raise JSONLimitError("Integers must fit in 64 bits.", where)
            size += _SCALAR_SIZE
        if max_size is not None and size > max_size:
            raise JSONLimitError(f"Larger than {max_size} characters.", where)
    return size


def json_limit_error(exc: JSONLimitError) -> BadRequest:
    """A 400 naming the top-level field (and the path inside it) that broke a limit."""
    field = exc.path.split(".", 1)[0] if exc.path else "non_field_errors"
    where = f" (at {exc.path})" if exc.path else ""
    message = f"{exc.message}{where}"
    return BadRequest(f"Invalid value for '{field}': {message}", code="invalid", details={field: [message]})


class JSONParser(parsers.JSONParser):
    """DRF's parser, with deep nesting a 400 (not a RecursionError) and `check_json` on the whole body."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = parsers.get_encoding(parser_context or {})
        try:
            decoded_stream = codecs.getreader(encoding)(stream)
            parse_constant = json.strict_constant if self.strict else None
            data = json.load(decoded_stream, parse_constant=parse_constant)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply.", code="too_deep") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        try:
            check_json(data, max_depth=settings.API_MAX_JSON_DEPTH)
        except JSONLimitError as exc:
            raise json_limit_error(exc) from None
        return data

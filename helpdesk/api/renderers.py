"""JSON rendering with orjson: several times faster than the standard library on list endpoints."""

import datetime
import decimal
import uuid

import orjson
from rest_framework.renderers import BaseRenderer

from helpdesk.timestamps import iso


def _default(obj):
    if isinstance(obj, datetime.datetime):
        return iso(obj)
    if isinstance(obj, uuid.UUID | decimal.Decimal):
        return str(obj)
    if isinstance(obj, datetime.date):
        return obj.isoformat()
    # DRF's lazy strings and ErrorDetail
    return str(obj)


def dumps(data) -> bytes:
    return orjson.dumps(
        data, default=_default, option=orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_NON_STR_KEYS
    )


class JSONRenderer(BaseRenderer):
    media_type = "application/json"
    format = "json"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        return dumps(data)

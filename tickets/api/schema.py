"""tickets' parts of the OpenAPI document: the schemas of the search's query parameters (tickets/filters.py), as
the server enforces them, registered with helpdesk/api/schema.py from TicketsConfig.ready()."""

from tickets import search
from tickets.models import PRIORITIES, SILOS

_UUID_OR_NONE = {"type": "string", "pattern": r"^(none|[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12})$"}
_FLAG = {"type": "string", "enum": ["Y", "N", "0", "1"]}


def parameter_schemas() -> dict:
    # The search's filters load with the API, not at start-up (ready() registers this function).
    from tickets.filters import PRIORITY_OPS, RATINGS

    return {
        "hasAssignee": _FLAG,
        "hasParent": _FLAG,
        "hasTags": _FLAG,
        "slaBreached": _FLAG,
        "spam": {"type": "string", "enum": ["true", "false", "1", "0", "y", "n", "yes", "no"]},
        "silo": {"type": "string", "enum": list(SILOS), "default": "tickets"},
        "rating": {"type": "string", "enum": list(RATINGS)},
        "priority": {"type": "integer", "enum": list(PRIORITIES)},
        "priorityOp": {"type": "string", "enum": list(PRIORITY_OPS), "default": "eq"},
        "subject": {"type": "string", "minLength": 1, "maxLength": 500},
        "query": {"type": "string", "minLength": 1, "maxLength": 500},
        "shortID": {"type": "string", "minLength": 1, "maxLength": 20},
        "assignment.teamID": _UUID_OR_NONE,
        "assignment.agentID": _UUID_OR_NONE,
        "language[]": {
            "type": "array",
            "maxItems": 100,
            "items": {"type": "string", "enum": sorted(search.LANGUAGE_CHOICES)},
        },
        "customFields": {
            "type": "object",
            "maxProperties": 100,
            "propertyNames": {"pattern": r"^[A-Za-z0-9_-]{1,100}$"},
            "additionalProperties": {"type": "string", "minLength": 1},
        },
        "customFieldsExist[]": {
            "type": "array",
            "maxItems": 100,
            "items": {"type": "string", "pattern": r"^[A-Za-z0-9_-]{1,100}$"},
        },
        "teamIDs[]": {"type": "array", "maxItems": 100, "items": {"type": "string", "format": "uuid"}},
        "tagIDs[]": {"type": "array", "maxItems": 100, "items": {"type": "string", "format": "uuid"}},
    }

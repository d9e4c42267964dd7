"""OpenAPI extras: the contract's error shape on every operation, readable summaries and tags, response headers,
and strict request bodies (the postprocessing hooks of SPECTACULAR_SETTINGS; the view is in schema_view.py)."""

from collections.abc import Callable

from helpdesk.api import resources

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error", "code", "details"],
    "properties": {
        "error": {"type": "string", "description": "Human-readable summary"},
        "code": {"type": "string", "description": "Stable machine code, e.g. invalid, not_found, last_owner"},
        "details": {"nullable": True, "description": "Field errors {field: [messages]} or null"},
    },
}
_ERRORS = {
    "400": "Bad input (the field is named in details)",
    "401": "Missing or invalid credentials",
    "403": "Authenticated, but the role or token does not allow it",
    "404": "Not found (or belonging to another license)",
    "429": "Over a rate limit, or too many failed authentication attempts (Retry-After)",
    "503": "The database is unavailable; retry after Retry-After seconds",
}


def add_error_responses(result, generator, request, public):
    """Postprocessing hook: every operation documents the error shape for its failure statuses."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    ref = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            responses = operation.setdefault("responses", {})
            for status, description in _ERRORS.items():
                responses.setdefault(status, {"description": description, **ref})
            if "requestBody" in operation:
                responses.setdefault(
                    "413", {"description": "The request body is larger than the limit", **ref}
                )
            if "409" not in responses and any(
                k in operation.get("operationId", "") for k in ("destroy", "update", "create")
            ):
                responses["409"] = {"description": "Conflict with the current state", **ref}
    return result


# --- Summaries, descriptions and tags: derived from the operation ID (`agents_list` → "List agents") so that
# the docs page reads like a table of contents; explicit `extend_schema(summary=...)` wins, _SUMMARIES overrides
# where the derivation reads wrong. Resource viewsets declare their tag and nouns (helpdesk.api.resources); the
# tables below hold the other views'.
_TAGS = {
    "agents": ("Agents", "The people of a license: roles, teams, invitations."),
    "attachments": ("Attachments", "Signed download links of message attachments."),
    "auditLog": ("Audit log", "Who changed what, when and through which channel (owners only)."),
    "invitations": ("Invitations", "Accepting an invitation to join a license."),
    "licenses": ("Licenses", "Your help desk accounts: company, settings, e-mail forwarding."),
    "reports": (
        "Reports",
        "Volume, response and resolution times, ratings, status and failed mail, per range.",
    ),
    "subscriptions": ("Subscriptions", "Plans, seats and billing of a license."),
    "teams": ("Teams", "Groups of agents that tickets are assigned to."),
    "templates": ("Templates", "E-mail templates of the messages sent to customers."),
    "tickets": ("Tickets", "Customer conversations: search, create, update, reply."),
    "transactions": ("Transactions", "Uploads of attachments before they are added to a message."),
}
# Singular and plural of each resource as a reader says them.
_NOUNS = {
    "agents": ("agent", "agents"),
    "attachments": ("attachment", "attachments"),
    "auditLog": ("audit log entry", "audit log entries"),
    "invitations": ("invitation", "invitations"),
    "licenses": ("license", "licenses"),
    "reports": ("report", "reports"),
    "subscriptions": ("subscription", "subscriptions"),
    "teams": ("team", "teams"),
    "templates": ("template", "templates"),
    "tickets": ("ticket", "tickets"),
    "transactions": ("transaction", "transactions"),
}
_ACTIONS = {
    "list": ("List {plural}", "Lists the {plural} of the caller's license."),
    "create": ("Create {singular}", "Creates {a} {singular} in the caller's license and returns it."),
    "retrieve": ("Get {singular}", "Returns one {singular} of the caller's license."),
    "partial_update": (
        "Update {singular}",
        "Changes the given fields of {a} {singular} (the others are left as they are) and returns it.",
    ),
    "update": ("Update {singular}", "Changes {a} {singular} and returns it."),
    "destroy": ("Delete {singular}", "Deletes {a} {singular}."),
    "bulk_update": (
        "Update {plural} in bulk",
        "Changes the given fields of several {plural} in one request.",
    ),
}
_SUMMARIES = {
    "agents_invite_create": "Send invitation again",
    "apps_grants_list": "List grants",
    "apps_grants_destroy": "Revoke grant",
    "attachment_download": "Download attachment",
    "auditLog_list": "List audit log entries",
    "invitations_accept_create": "Accept invitation",
    "licenses_forwardingInstructions_create": "Send forwarding instructions",
    "subscriptions_cancel_create": "Cancel subscription",
    "subscriptions_reactivate_create": "Reactivate subscription",
    "templates_preview_create": "Preview template",
    "templates_sendTestMessage_create": "Send test message",
    "tickets_list": "Search tickets",
    "tickets_childTickets_create": "Merge a ticket into this one",
    "transactions_create": "Start transaction",
    "transactions_attachments_create": "Upload attachment",
    "webhooks_deliveries_list": "List webhook deliveries",
    "webhooks_deliveries_redeliver_create": "Redeliver webhook delivery",
}
_DESCRIPTIONS = {
    "attachment_download": "The attachment's bytes, from the signed link a ticket's message carries (no credentials).",
    "invitations_accept_create": "Accepts an invitation with the token its e-mail carried: the account joins the license.",
    "tickets_list": "Searches the tickets of the caller's license: filters, full-text `query`, pages and cursors.",
    "tickets_childTickets_create": "Creates a child ticket from messages of this ticket, linked to it.",
}


def _declared() -> tuple[dict, dict]:
    """(tags, nouns) of every view: the tables above and the resource viewsets' declarations."""
    viewsets = resources.REGISTRY.items()
    return (
        {**_TAGS, **{name: viewset.openapi_tag for name, viewset in viewsets}},
        {**_NOUNS, **{name: viewset.noun for name, viewset in viewsets}},
    )


def _derived(operation_id: str, resource: str, nouns: dict) -> tuple[str, str]:
    singular, plural = nouns.get(resource, (resource, resource))
    action = operation_id.removeprefix(resource + "_")
    summary_format, description_format = _ACTIONS.get(action, (None, None))
    summary = _SUMMARIES.get(operation_id) or (
        summary_format.format(singular=singular, plural=plural) if summary_format else operation_id
    )
    description = (
        description_format.format(
            singular=singular, plural=plural, a="an" if singular[:1] in "aeiou" else "a"
        )
        if description_format
        else f"{summary}."
    )
    description = _DESCRIPTIONS.get(operation_id, description)
    return summary, description


def describe_operations(result, generator, request, public):
    """Postprocessing hook: a summary, a description and a readable tag on every operation; tag descriptions."""
    tags, nouns = _declared()
    used = set()
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            resource = (operation.get("tags") or [""])[0]
            summary, description = _derived(operation.get("operationId", ""), resource, nouns)
            operation.setdefault("summary", summary)
            operation["description"] = operation.get("description") or description
            if resource in tags:
                operation["tags"] = [tags[resource][0]]
                used.add(resource)
    result["tags"] = [{"name": tags[r][0], "description": tags[r][1]} for r in sorted(used)]
    return result


# --- Response headers clients need (generated clients expose only what the document declares).
_PAGE_HEADERS = {
    "X-Total-Results": {
        "description": "Items matching the filters (all pages).",
        "schema": {"type": "integer"},
    },
    "X-Total-Pages": {"description": "ceil(X-Total-Results / pageSize).", "schema": {"type": "integer"}},
    "Link": {
        "description": 'Cursor URLs of the next and previous pages: `<url>; rel="next"`, `<url>; rel="prev"`.',
        "schema": {"type": "string"},
    },
}
_RETRY_AFTER = {
    "Retry-After": {"description": "Seconds to wait before trying again.", "schema": {"type": "integer"}}
}


def add_headers(result, generator, request, public):
    """Postprocessing hook: paging headers on paged lists, Retry-After on 429 and 503."""
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            names = {p.get("name") for p in operation.get("parameters", [])}
            responses = operation.get("responses", {})
            if method == "get" and "pageSize" in names and "200" in responses:
                responses["200"].setdefault("headers", {}).update(_PAGE_HEADERS)
            for status in ("429", "503"):
                if status in responses:
                    responses[status].setdefault("headers", {}).update(_RETRY_AFTER)
    return result


# --- Query parameters: what the server enforces (a fuzzer reading the document must not be surprised).
RELATIVE_OR_ISO_DATE = _RELATIVE_OR_ISO_DATE = (
    r"^([-+][0-9]{1,3}[nhdmHDM]|[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])"
    r"(T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z)?)$"
)
# The query parameters of an app's own filters ({name: schema}) come from the app: a source registered from its
# AppConfig.ready() (tickets: tickets/api/schema.py) and called when the document is generated.
_PARAMETER_SOURCES: list[Callable[[], dict]] = []


def register_parameters(source: Callable[[], dict]) -> None:
    """Add `source()`'s {query parameter name: schema} to what constrain_parameters enforces in the document."""
    if source not in _PARAMETER_SOURCES:
        _PARAMETER_SOURCES.append(source)


def _parameter_schemas() -> dict:
    import zoneinfo

    schemas = {
        "timezone": {"type": "string", "enum": sorted(zoneinfo.available_timezones()), "default": "UTC"}
    }
    for source in _PARAMETER_SOURCES:
        schemas.update(source())
    return schemas


# Request body fields whose rule a serializer field type does not carry.
_BODY_FIELDS = {
    "url": {"pattern": r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[!-~]*)?$"},  # webhooks: http(s) receivers
}


def constrain_parameters(result, generator, request, public):
    """Postprocessing hook: enums, patterns and lengths of query parameters; a present but empty parameter is
    refused by every list (helpdesk/api/filtersets.py), so every string parameter has minLength 1."""
    overrides = _parameter_schemas()
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("in") != "query":
                    continue
                name = parameter["name"]
                schema = parameter.get("schema", {})
                if name in overrides:
                    schema = parameter["schema"] = dict(overrides[name])
                    if schema["type"] == "array":
                        parameter["style"], parameter["explode"] = "form", True
                elif schema.get("example") == "-1D":  # a relative-date bound (tickets/filters.py)
                    schema["pattern"] = _RELATIVE_OR_ISO_DATE
                if schema.get("type") == "string" and "enum" not in schema:
                    schema.setdefault("minLength", 1)
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "header" and parameter["name"] == "Idempotency-Key":
                    parameter["schema"] = {"type": "string", "pattern": "^[ -~]{1,255}$"}
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name.startswith(("Webhook", "PatchedWebhook")) and name.endswith("Request"):
            for field, extra in _BODY_FIELDS.items():
                if field in component.get("properties", {}):
                    component["properties"][field].update(extra)

    return result

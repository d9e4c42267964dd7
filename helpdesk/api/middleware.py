"""Per-request set-up for the API: the actor context (IP, User-Agent), the User-Agent rule and the body size limit."""

from django.conf import settings

from helpdesk.api.errors import DATABASE_ERRORS, database_unavailable, json_error
from helpdesk.context import HELPDESK_SYSTEM, Actor, reset_actor, set_actor

_SUMMARIES = {400: "Bad request.", 403: "Forbidden.", 404: "Not found.", 500: "Internal server error."}


def client_ip(request) -> str:
    # Behind a proxy, configure it to set REMOTE_ADDR (or use a trusted-proxy middleware).
    return request.META.get("REMOTE_ADDR", "")


def _declared_length(request) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0  # Django reads such a body as empty


class ApiRequestMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user_agent = request.META.get("HTTP_USER_AGENT", "")
        is_api = request.path.startswith("/v1/")
        if (
            is_api
            and settings.HELPDESK_REQUIRE_USER_AGENT
            and not user_agent.strip()
            and request.path not in ("/v1/docs", "/v1/docs/")
        ):
            return json_error(400, "A User-Agent header is required.", "user_agent_required")
        if is_api and _declared_length(request) > settings.UPLOAD_MAX_REQUEST_BYTES:
            # Refused before anything reads the body: an upload is otherwise spooled to disk in full first.
            limit = settings.UPLOAD_MAX_REQUEST_BYTES
            return json_error(
                413,
                f"The request body is larger than the limit of {limit} bytes.",
                "payload_too_large",
                {"Content-Length": [f"At most {limit} bytes."]},
            )
        token = set_actor(Actor(type=HELPDESK_SYSTEM, ip=client_ip(request), user_agent=user_agent[:512]))
        try:
            response = self.get_response(request)
        finally:
            reset_actor(token)
        if is_api and response.status_code >= 400 and "json" not in response.get("Content-Type", ""):
            # Django's own pages (a 404 from URL resolution, DEBUG's technical pages) never leave the API.
            return json_error(response.status_code, _SUMMARIES.get(response.status_code, "Request failed."))
        return response

    def process_exception(self, request, exception):
        # A database outage outside DRF's views (the admin, Django's own views): a plain 503, not a traceback.
        if isinstance(exception, DATABASE_ERRORS):
            return database_unavailable(request, exception)
        return None

"""Domain errors: how a service refuses, without knowing about HTTP.

Services (accounts, billing, templates_app, tickets) raise these; the API's one exception handler
(helpdesk.api.errors) maps each kind to its status and the contract's error shape, and the admin, the pages and
the commands show `message`. `code` is the stable machine code, `details` the `{field: [messages]}` object (or
None), `retry_after` the seconds a client should wait before retrying (Retry-After), when that helps.
"""

from __future__ import annotations


class DomainError(Exception):
    code = "invalid"
    message = "Invalid request."

    def __init__(
        self, message: str | None = None, *, code: str | None = None, details=None, retry_after=None
    ):
        self.message = message or type(self).message
        self.code = code or type(self).code
        self.details = details
        self.retry_after = retry_after
        super().__init__(self.message)


class Invalid(DomainError):
    """Bad input the serializers could not see (an ID of another license, a state the body asks for...)."""


class Forbidden(DomainError):
    code = "permission_denied"
    message = "You do not have permission to perform this action."


class NotFound(DomainError):
    code = "not_found"
    message = "Not found."


class Conflict(DomainError):
    """The change is not allowed in the current state (a transition, a duplicate, a busy resource)."""

    code = "conflict"
    message = "The request conflicts with the current state of the resource."


class PaymentRequired(DomainError):
    code = "card_declined"
    message = "The payment was declined."


class TooLarge(DomainError):
    code = "payload_too_large"
    message = "The request body is too large."


class Unavailable(DomainError):
    """A service the change depends on (the payment gateway) did not answer; retrying later may succeed."""

    code = "unavailable"
    message = "A service this operation depends on is unavailable; retry shortly."


def field_error(field: str, message: str, code: str = "invalid") -> Invalid:
    """Invalid input named by its field (the API's spelling), as a serializer would report it."""
    return Invalid(f"Invalid value for '{field}': {message}", code=code, details={field: [message]})

"""Request and response examples of the main resources, shown on the docs page (and tried by the fuzz test)."""

from drf_spectacular.utils import OpenApiExample

_AGENT_ID = "2f3c6a1e-8b1d-4c55-9d0e-6a7b8c9d0e1f"
_TEAM_ID = "6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b"
_TICKET_ID = "0d9e8f7a-6b5c-4d3e-8f1a-2b3c4d5e6f70"
_STAMPS = {
    "createdAt": "2026-11-23T09:15:02.123Z",
    "createdBy": "a4b5c6d7-e8f9-4a0b-9c1d-2e3f4a5b6c7d",
    "createdByType": "agent",
    "updatedAt": "2026-11-23T09:15:02.123Z",
    "updatedBy": "a4b5c6d7-e8f9-4a0b-9c1d-2e3f4a5b6c7d",
}

# operationId → examples (request examples go to the request body, response examples to the 2xx response).
EXAMPLES = {
    "agents_create": [
        OpenApiExample(
            "Invite an agent",
            value={
                "email": "jane@example.com",
                "name": "Jane Doe",
                "roles": ["normal"],
                "jobTitle": "Support",
            },
            request_only=True,
        ),
    ],
    "agents_retrieve": [
        OpenApiExample(
            "An agent",
            value={
                "ID": _AGENT_ID,
                "licenseID": 42,
                "accountID": "b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d5e",
                **_STAMPS,
                "roles": ["normal"],
                "teamIDs": [_TEAM_ID],
                "email": "jane@example.com",
                "name": "Jane Doe",
                "status": "active",
                "avatar": "",
                "jobTitle": "Support",
                "flags": {},
                "settings": {},
                "autoassignment": False,
                "autoassignmentTeamIDs": [],
                "signature": {"text": "", "html": ""},
            },
            response_only=True,
        ),
    ],
    "teams_create": [
        OpenApiExample(
            "Create a team", value={"name": "Billing", "replyName": "Acme Billing"}, request_only=True
        ),
    ],
    "tickets_create": [
        OpenApiExample(
            "A customer's request",
            value={
                "subject": "Cannot log in",
                "requester": {"email": "customer@example.org", "name": "Chris Customer"},
                "message": {"text": "Since this morning the login page says my password is wrong."},
                "priority": 10,
            },
            request_only=True,
        ),
    ],
    "tickets_partial_update": [
        OpenApiExample(
            "Reply and mark solved",
            value={"status": "solved", "message": {"text": "Fixed: please try again.", "isPrivate": False}},
            request_only=True,
        ),
    ],
    "webhooks_create": [
        OpenApiExample(
            "Subscribe to new tickets",
            value={
                "name": "CRM sync",
                "eventType": "tickets.create",
                "url": "https://crm.example.com/helpdesk",
            },
            request_only=True,
        ),
    ],
    "views_create": [
        OpenApiExample(
            "A shared view",
            value={"name": "Unassigned, urgent", "filters": {"assignment.agentID": "none", "priority": "20"}},
            request_only=True,
        ),
    ],
    "views_retrieve": [
        OpenApiExample(
            "A private view",
            value={
                **_STAMPS,
                "ID": "5f2b8a8e-3c1d-4e0f-9a57-2b9d6c41e7a3",
                "licenseID": 42,
                "agentID": _AGENT_ID,
                "name": "My team's open tickets",
                "filters": {"status": "open", "teamIDs[]": [_TEAM_ID]},
                "ordering": 0,
            },
            response_only=True,
        ),
    ],
    "customFields_create": [
        OpenApiExample(
            "A dropdown field",
            value={"apiKey": "plan", "displayName": "Plan", "type": "dropdown", "options": ["basic", "pro"]},
            request_only=True,
        ),
    ],
    "customFields_retrieve": [
        OpenApiExample(
            "A date field of one team",
            value={
                **_STAMPS,
                "ID": "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
                "licenseID": 42,
                "apiKey": "dueDate",
                "displayName": "Due date",
                "type": "date",
                "roleLevel": "normal",
                "status": "active",
                "options": [],
                "teamIDs": [_TEAM_ID],
            },
            response_only=True,
        ),
    ],
}

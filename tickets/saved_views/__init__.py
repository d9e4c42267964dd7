"""Views: saved ticket searches (`/v1/views`), shared (agentID null, owners write them) or private to their agent
(invisible to everyone else, owners included), with their tickets and their exact counts.

models: View · services: CRUD, the filters validated by the search itself · api: the viewset
(`GET /v1/views/{ID}/tickets`, `GET /v1/views/counts`).
"""

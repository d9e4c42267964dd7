"""Webhooks: an owner subscribes a URL to one event type; every matching change writes a delivery row (the
outbox) in its own transaction, and a Celery task POSTs it, signed, retrying for up to a day.

models: Webhook, WebhookDelivery · services: CRUD · outbox: what the changes write · delivery: the send,
its retries and the sweeper · guard: no request forgery into the host's network · api: the viewset.
"""

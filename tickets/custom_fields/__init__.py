"""Custom fields: a license's definitions of what `customFields` on a ticket may hold (`/v1/customFields`).

models: CustomField · values: a value checked against its type, the one step every ticket write runs
(`checked_values`, called by tickets.services) · services: CRUD · api: the viewset.
"""

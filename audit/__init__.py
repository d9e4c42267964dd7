"""The audit log: who changed what in a license, when, from where, and each field's before and after.

- registry.py: which models are audited, one `register()` line each: accounts' in registrations.py, the
  other apps' in their AppConfig.ready() (audit sits below them and imports none of their models).
- capture.py: signal receivers; one entry per changed object, written before the unit of work commits
  (helpdesk/transactions.py).
- chain.py: the per-license hash chain (append under a row lock; verify), `verify_audit_chain` command.
- models.py: append-only `AuditEntry`, `AuditChainHead`, `AuditPurge` (the only way to delete entries; database
  triggers of migration 0003 enforce it). digests.py: chain heads published outside the database.
- api/, filters.py: `GET /v1/auditLog` for owners. services.py/tasks.py: retention (default: forever).
"""

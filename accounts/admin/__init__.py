"""The admin of the accounts domain; `tenancy.LicenseScopedAdmin` and `writes.ServiceAdmin` are the bases
that every app's license-owned admin uses."""

from accounts.admin import agents, identities, licenses, teams  # noqa: F401  (registers the admins)

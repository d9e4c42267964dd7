"""The privileges of the application role in a two-role PostgreSQL deployment (docs/operations.md).

The owner role (which runs `migrate`) owns the tables, the triggers and the purge function; the web processes
and workers connect as an application role that may read and write the product's tables, but may not update,
delete or truncate audit entries and purge records, and, not being the owner, cannot turn the triggers off.
The retention purge still works: it inserts a purge record, and the deleting trigger function runs with the
owner's rights (SECURITY DEFINER).
"""

from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from psycopg import sql

AUDIT_TABLES = ("audit_auditentry", "audit_auditpurge")


def statements(app_role: str) -> list[str]:
    role = sql.Identifier(app_role)
    tables = sql.SQL(", ").join(sql.Identifier(table) for table in AUDIT_TABLES)
    parts = [
        sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(role),
        sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {}").format(role),
        sql.SQL("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {}").format(role),
        sql.SQL("REVOKE UPDATE, DELETE, TRUNCATE ON {} FROM {}").format(tables, role),
        # Tables that later migrations create: readable and writable by the application role too.
        sql.SQL(
            "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {}"
        ).format(role),
        sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO {}").format(
            role
        ),
    ]
    return [part.as_string(connection.connection) for part in parts]


class Command(BaseCommand):
    help = (
        "Print (or run, with --execute) the GRANT/REVOKE statements that let APP_ROLE run the service but not "
        "delete, truncate or rewrite audit entries. Run as the role that owns the tables (PostgreSQL only)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--app-role", required=True, help="the role the web processes and workers log in as"
        )
        parser.add_argument(
            "--execute", action="store_true", help="run the statements instead of printing them"
        )

    def handle(self, *args, app_role, execute=False, **options):
        if connection.vendor != "postgresql":
            raise CommandError("roles exist on PostgreSQL only (SQLite has none: see docs/operations.md)")
        connection.ensure_connection()
        lines = statements(app_role)
        if not execute:
            for line in lines:
                self.stdout.write(f"{line};")
            return
        with connection.cursor() as cursor:
            for line in lines:
                cursor.execute(line)
        self.stdout.write(
            self.style.SUCCESS(f"{app_role} may no longer delete, truncate or rewrite audit entries")
        )

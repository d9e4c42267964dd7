"""Ticket–team links carry the ticket's license, silo and status (the team inbox's count, see TicketTeam).

The relation table stays where it is: `TicketTeam` takes over the auto-created `tickets_ticket_teams` (same
table, columns, unique constraint and indexes, so only Django's state changes), then the copies are added and
filled from the tickets, and the inbox index is built. The fill rewrites every link in one transaction (1.2
million links: ~1 minute on the benchmark's machine), and adding the columns locks the table against reads and
writes until it commits, so searches wait too: run it with the web processes stopped (docs/operations.md), then
`VACUUM ANALYZE tickets_ticket_teams` so that the inbox counts are index-only at once.
"""

import django.db.models.deletion
from django.db import migrations, models

FILL = """
    UPDATE tickets_ticket_teams SET (license_id, silo, status) = (
        SELECT t.license_id, t.silo, t.status FROM tickets_ticket t WHERE t.id = tickets_ticket_teams.ticket_id
    )"""


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_attachment_transaction_bound_index"),
        ("tickets", "0007_purge_indexes"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="TicketTeam",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "team",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, to="accounts.team"
                            ),
                        ),
                        (
                            "ticket",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, to="tickets.ticket"
                            ),
                        ),
                    ],
                    options={
                        "db_table": "tickets_ticket_teams",
                        "unique_together": {("ticket", "team")},
                        # built by 0005 as SQL; in the state, so that SQLite's table rebuilds below keep it
                        "indexes": [models.Index(fields=["team", "ticket"], name="ticket_teams_team_ticket")],
                    },
                ),
                migrations.AlterField(
                    model_name="ticket",
                    name="teams",
                    field=models.ManyToManyField(
                        blank=True, related_name="tickets", through="tickets.TicketTeam", to="accounts.team"
                    ),
                ),
            ],
        ),
        migrations.AddField(
            model_name="ticketteam",
            name="license",
            field=models.ForeignKey(
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="accounts.license",
            ),
        ),
        migrations.AddField(
            model_name="ticketteam",
            name="silo",
            field=models.CharField(
                choices=[(s, s) for s in ("tickets", "archive", "spam", "trash")],
                default="tickets",
                max_length=10,
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="ticketteam",
            name="status",
            field=models.CharField(
                choices=[(s, s) for s in ("open", "pending", "onhold", "solved", "closed")],
                default="open",
                max_length=10,
            ),
            preserve_default=False,
        ),
        migrations.RunSQL(FILL, migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="ticketteam",
            name="license",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="accounts.license",
            ),
        ),
        migrations.AddIndex(
            model_name="ticketteam",
            index=models.Index(
                fields=["license", "team", "silo", "status", "ticket"], name="ticket_team_inbox"
            ),
        ),
    ]

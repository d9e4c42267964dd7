"""Covering indexes on the relation tables, led by the related object, so that teamIDs[] / tagIDs[] / follower
filters and their counts read only indexes (the auto-created tables have (ticket, x) unique and single columns)."""

from django.db import migrations

INDEXES = [
    ("ticket_teams_team_ticket", "tickets_ticket_teams", "team_id, ticket_id"),
    ("ticket_tags_tag_ticket", "tickets_ticket_tags", "tag_id, ticket_id"),
    ("ticket_followers_agent_ticket", "tickets_ticket_followers", "agent_id, ticket_id"),
]


class Migration(migrations.Migration):
    dependencies = [("tickets", "0004_search_vector_statistics")]

    operations = [
        migrations.RunSQL(f"CREATE INDEX {name} ON {table} ({columns})", f"DROP INDEX {name}")
        for name, table, columns in INDEXES
    ]

"""Rules: conditions and actions that run inside a ticket write's transaction (tickets.rules.engine)."""

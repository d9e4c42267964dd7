"""Macros: named lists of actions an agent applies to a ticket in one write (tickets.actions)."""

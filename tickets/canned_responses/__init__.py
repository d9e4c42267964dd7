"""Canned responses: answers a team reuses, with shortcuts and the templates' placeholders."""

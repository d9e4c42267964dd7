"""The exact field names and enumerations of the spec, for shape tests.

The suite keeps its own copy (tests/data/fields.json): it never reads anything outside the repository."""

import json
from pathlib import Path

_PATH = Path(__file__).resolve().parent / "data" / "fields.json"
FIELDS = json.loads(_PATH.read_text())
ENUMS = FIELDS["enums"]

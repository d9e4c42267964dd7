"""The exact field names and enumerations of the spec (shared/spec/fields.json), for shape tests."""

import json
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "shared" / "spec" / "fields.json"
FIELDS = json.loads(_PATH.read_text())
ENUMS = FIELDS["enums"]

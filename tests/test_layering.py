"""Dependencies point one way: accounts (the base) imports no app built on it, and the services speak in domain
errors, not HTTP (helpdesk/errors.py; the API's one exception handler maps them)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
UPPER_APPS = {"tickets", "billing", "templates_app", "audit"}


SERVICES = [
    "accounts/services.py",
    "accounts/oauth/services.py",
    "billing/services.py",
    "templates_app/services.py",
    "templates_app/inbound/services.py",
    "templates_app/invitations.py",
    "templates_app/reply_addresses.py",
    "tickets/services.py",
    "tickets/webhooks/services.py",
]


def _imports(path: Path):
    """Every name an import statement brings in, at any depth (inside functions too), in full: `from x import y`
    gives x.y (y may be a module or a name in x)."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def _accounts_modules():
    return sorted(
        path for path in (ROOT / "accounts").rglob("*.py") if "migrations" not in path.relative_to(ROOT).parts
    )


def test_the_walk_sees_imports_inside_functions(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from billing.seats import x\n    import tickets.models\n")
    assert {name for _, name in _imports(module)} == {"billing.seats.x", "tickets.models"}


def test_accounts_imports_no_app_built_on_it():
    offending = []
    for path in _accounts_modules():
        relative = path.relative_to(ROOT).as_posix()
        for lineno, name in _imports(path):
            if name.split(".")[0] in UPPER_APPS:
                offending.append(f"{relative}:{lineno} imports {name}")
    assert len(_accounts_modules()) > 20  # the walk really covers accounts
    assert offending == []


@pytest.mark.parametrize("module", SERVICES)
def test_services_import_no_http_layer(module):
    offending = [
        f"{module}:{lineno} imports {name}"
        for lineno, name in _imports(ROOT / module)
        if name.split(".")[0] == "rest_framework"
        or name == "helpdesk.api"
        or name.startswith("helpdesk.api.")
        or "serializers" in name.split(".")
    ]
    assert offending == []

"""Dependencies point one way (docs/architecture.md, "Dependencies point one way").

Every import of every module of the project (migrations excluded), at module level and inside functions, `import
x` and `from x import y`, relative ones resolved, goes down the layers below or stays inside its own app; the graph
of those imports has no circle between apps, and none among the modules of the e-mail app. The services speak in
domain errors, not HTTP (helpdesk/errors.py; the API's one exception handler maps them).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("helpdesk", "accounts", "audit", "tickets", "billing", "templates_app")

# Bottom first. A module may import its own app and the layers below; two apps of one layer import neither the
# other. An app reaches up only through signals and registries filled from the upper app's AppConfig.ready().
LAYERS = [
    {
        "helpdesk"
    },  # the shared machinery: helpdesk/api/, errors, context, transactions, queue, roles, logs, ...
    {"accounts"},  # the base of the domain: licenses, agents, teams, tokens, the API's authentication
    {"audit"},  # the change log every write goes through; apps above register their audited models
    {"tickets"},  # tickets, tags, webhooks (apps above register their webhook resources)
    {"billing", "templates_app"},  # subscriptions; the e-mail channel
    {"wiring"},  # the project: settings, urls, the Celery app, wsgi/asgi, the supervisor
]
WIRING = {
    "helpdesk",  # its __init__ loads the Celery app
    "helpdesk.settings",
    "helpdesk.urls",
    "helpdesk.celery",
    "helpdesk.wsgi",
    "helpdesk.asgi",
    "helpdesk.supervisor",
}
LAYER_OF = {group: index for index, layer in enumerate(LAYERS) for group in layer}

# Circles inside an app other than the e-mail app that are left on purpose (none may be added):
KNOWN_CIRCLES = [
    # Django finds LicenseApp in accounts.models (imported at its end); oauth.models builds on its base classes.
    {"accounts.models", "accounts.oauth.models"},
    # register() connects the capture's receivers for the model it registers; the capture reads the registry.
    {"audit.capture", "audit.registry"},
]

SERVICES = [
    "accounts/services.py",
    "accounts/oauth/services.py",
    "billing/services.py",
    "templates_app/services.py",
    "templates_app/inbound/services.py",
    "templates_app/invitations.py",
    "templates_app/reply_addresses.py",
    "tickets/services.py",
    "tickets/sub_resources.py",
    "tickets/webhooks/services.py",
]


def _name_of(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path = ROOT, packages=PACKAGES) -> dict[str, Path]:
    """{dotted name: path} of every module of the packages, migrations excluded."""
    return {
        _name_of(path, root): path
        for package in packages
        for path in sorted((root / package).rglob("*.py"))
        if "migrations" not in path.relative_to(root).parts
    }


def _imports(path: Path, name: str):
    """(line, dotted name) of every name an import statement brings in, at any depth (inside functions too), in
    full: `from x import y` gives x.y (y may be a module or a name in x); relative imports are resolved against
    the module's own package (`name`: the module's dotted name)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"


def _resolve(name: str, modules) -> str | None:
    """The project module an imported name lives in (the longest known prefix), None outside the project."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _group(module: str) -> str:
    return "wiring" if module in WIRING else module.split(".")[0]


def _graph(modules) -> dict[str, dict[str, list[int]]]:
    """{module: {imported project module: [lines]}} over every import at any depth."""
    graph: dict[str, dict[str, list[int]]] = {}
    for name, path in modules.items():
        edges = graph.setdefault(name, {})
        for lineno, imported in _imports(path, name):
            target = _resolve(imported, modules)
            if target is not None and target != name:
                edges.setdefault(target, []).append(lineno)
    return graph


def _circles(graph: dict[str, set]) -> list[set]:
    """The strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def _app_graph(graph) -> dict[str, set]:
    apps: dict[str, set] = {}
    for module, edges in graph.items():
        apps.setdefault(_group(module), set()).update(
            _group(target) for target in edges if _group(target) != _group(module)
        )
    return apps


MODULES = _modules()
GRAPH = _graph(MODULES)


# --- the walk -------------------------------------------------------------------------------------------------


def test_the_walk_sees_imports_inside_functions_and_relative_ones(tmp_path):
    # given a module of a package that imports at module level, inside a function, and relatively
    package = tmp_path / "pkg" / "sub"
    package.mkdir(parents=True)
    for init in (tmp_path / "pkg" / "__init__.py", package / "__init__.py"):
        init.write_text("")
    (tmp_path / "pkg" / "other.py").write_text("")
    (package / "sibling.py").write_text("")
    module = package / "m.py"
    module.write_text(
        "import tickets.models\n"
        "from . import sibling\n"
        "from ..other import thing\n"
        "def f():\n"
        "    from billing.seats import x\n"
        "    class C:\n"
        "        def g(self):\n"
        "            from .sibling import y\n"
    )
    # when it is walked
    names = {name for _, name in _imports(module, "pkg.sub.m")}
    # then every import is seen, in full, the relative ones resolved against its package
    assert names == {
        "tickets.models",
        "pkg.sub.sibling",
        "pkg.other.thing",
        "billing.seats.x",
        "pkg.sub.sibling.y",
    }
    # and they resolve to the modules they load
    modules = _modules(tmp_path, ("pkg",))
    assert _graph(modules)["pkg.sub.m"].keys() == {"pkg.sub.sibling", "pkg.other"}


def test_the_circle_finder_finds_circles_and_only_them():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert sorted(map(sorted, _circles(graph))) == [["a", "b", "c"], ["d", "e"]]


def test_the_walk_covers_every_app_and_every_module_has_a_layer():
    by_group = {}
    for module in MODULES:
        by_group.setdefault(_group(module), []).append(module)
    assert set(by_group) == set(LAYER_OF)
    assert all(len(modules) >= 5 for modules in by_group.values()), {g: len(m) for g, m in by_group.items()}
    assert len(MODULES) > 150


# --- the rules --------------------------------------------------------------------------------------------------


def test_every_import_goes_down_the_layers_or_stays_in_its_app():
    offending = []
    for module, edges in GRAPH.items():
        group = _group(module)
        for target, lines in edges.items():
            other = _group(target)
            if other == group:
                continue
            if LAYER_OF[other] >= LAYER_OF[group]:
                path = MODULES[module].relative_to(ROOT).as_posix()
                offending.append(f"{path}:{lines[0]} ({group}) imports {target} ({other})")
    assert offending == []


def test_accounts_imports_no_app_built_on_it():
    offending = [
        f"{module}:{lines[0]} imports {target}"
        for module, edges in GRAPH.items()
        if module.startswith("accounts")
        for target, lines in edges.items()
        if _group(target) not in {"accounts", "helpdesk"}
    ]
    assert offending == []


def test_the_shared_machinery_imports_no_app():
    offending = [
        f"{module}:{lines[0]} imports {target}"
        for module, edges in GRAPH.items()
        if _group(module) == "helpdesk"
        for target, lines in edges.items()
        if _group(target) != "helpdesk"
    ]
    assert offending == []


def test_no_circle_between_apps():
    assert _circles(_app_graph(GRAPH)) == []


def test_no_circle_among_the_modules_of_the_e_mail_app():
    inside = {
        module: {target for target in edges if target.startswith("templates_app")}
        for module, edges in GRAPH.items()
        if module.startswith("templates_app")
    }
    assert len(inside) > 30
    assert _circles(inside) == []


def test_no_new_circle_inside_any_app():
    inside = {
        module: {target for target in edges if _group(target) == _group(module)}
        for module, edges in GRAPH.items()
    }
    assert [circle for circle in _circles(inside) if circle not in KNOWN_CIRCLES] == []


def test_package_inits_import_only_their_own_app():
    """Importing any module runs its packages' __init__ first, an import the walk does not follow: so an __init__
    imports only its own app (helpdesk/__init__.py is wiring: it loads the Celery app)."""
    offending = [
        f"{module}:{lines[0]} imports {target}"
        for module, edges in GRAPH.items()
        if MODULES[module].name == "__init__.py"
        for target, lines in edges.items()
        if _group(target) != _group(module)
    ]
    assert offending == []


def test_no_module_imports_a_task_module():
    """Tasks are entry points, like views: the code they run names them by their Celery name to enqueue them
    (helpdesk.queue.task_named), so no task and the code it calls import each other."""
    offending = [
        f"{module}:{lines[0]} imports {target}"
        for module, edges in GRAPH.items()
        for target, lines in edges.items()
        if target.endswith(".tasks") and module not in WIRING
    ]
    assert offending == []


def test_every_task_named_in_the_code_exists():
    from django.utils.module_loading import import_string

    pattern = re.compile(rf"^(?:{'|'.join(PACKAGES)})\.tasks\.[a-z_]+$")
    named = {
        node.value
        for path in MODULES.values()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and pattern.match(node.value)
    }
    assert "templates_app.tasks.send_outbound_message" in named
    missing = [name for name in sorted(named) if getattr(import_string(name), "name", None) != name]
    assert missing == []


@pytest.mark.parametrize("module", SERVICES)
def test_services_import_no_http_layer(module):
    name = _name_of(ROOT / module)
    offending = [
        f"{module}:{lineno} imports {imported}"
        for lineno, imported in _imports(ROOT / module, name)
        if imported.split(".")[0] == "rest_framework"
        or imported == "helpdesk.api"
        or imported.startswith("helpdesk.api.")
        or "serializers" in imported.split(".")
    ]
    assert offending == []

"""Imports flow one way: screens and the API on top, then services and pipelines, then the
lifecycle, audit and tenancy at the bottom. A loop between modules, even one hidden in a
function's body, means a lower layer reaches up."""

import ast
from pathlib import Path

import memory_review

ROOT = Path(memory_review.__file__).parent
SCREENS = ("memory_review.review.views", "memory_review.api.views")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every memory_review module `path` imports, at the top or inside a function."""
    package = module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else module_name(path)
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("memory_review")}


def graph() -> dict[str, set[str]]:
    paths = [p for p in ROOT.rglob("*.py") if "migrations" not in p.parts]
    modules = {module_name(p): p for p in paths}
    return {
        name: {dep for dep in imports(path) if dep in modules and dep != name}
        for name, path in modules.items()
    }


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(edges.get(node, ())):
            if state.get(dep) == 1:
                return stack[stack.index(dep) :] + [dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_module_imports_its_way_back_to_itself():
    edges = graph()
    # The package's own __init__ only starts Celery; it is not a layer.
    edges.pop("memory_review", None)
    for deps in edges.values():
        deps.discard("memory_review")
    assert cycle(edges) is None


def test_only_url_configurations_import_the_screens():
    offenders = sorted(
        name
        for name, deps in graph().items()
        if any(dep.startswith(SCREENS) for dep in deps)
        and not name.endswith("urls")
        and not name.startswith(SCREENS)
    )
    assert offenders == []


def test_the_cycle_finder_would_notice_a_loop():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


def packages() -> dict[str, set[str]]:
    def package(module: str) -> str:
        return module.split(".")[1] if "." in module else module

    edges: dict[str, set[str]] = {}
    for name, deps in graph().items():
        for dep in deps:
            if package(name) != package(dep) and "memory_review" not in (name, dep):
                edges.setdefault(package(name), set()).add(package(dep))
    return edges


def test_packages_import_one_way():
    """No package (or top-level module) reaches one that reaches it back, directly or round a
    loop: the last pairs (lifecycle.py with memories/ and assessments/) went when each package came
    to give the lifecycle its rows' moves, and the last loop (calibration, workflow, compliance)
    when the team's figure came to count the workflow's assignments for the figures' mark itself
    (review/team_page.py)."""
    assert cycle(packages()) is None


def test_the_bottom_imports_nothing_of_the_app_and_tenancy_only_the_bottom():
    edges = packages()

    assert edges.get("integrity", set()) == set()
    assert edges["tenancy"] <= {"integrity", "ops"}


def test_the_lifecycle_sits_below_every_package_whose_rows_it_moves():
    """It knows no row's model: memories/ and assessments/ give it their moves (Kind)."""
    assert packages()["lifecycle"] <= {"audit", "integrity", "ops", "tenancy", "textlimits"}

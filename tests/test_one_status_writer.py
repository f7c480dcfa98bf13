"""Nothing but lifecycle.transition() writes `status` (DESIGN §3)."""

import ast
from pathlib import Path

import memory_review

ROOT = Path(memory_review.__file__).parent
OWNER = ROOT / "lifecycle.py"


MODELS_WITH_STATUS = {"Memory", "PromotionCandidate"}


def status_writes(path: Path, root: Path = ROOT) -> list[str]:
    """Assignments to `.status`, `setattr(x, "status", ...)`, `status=` passed to
    update()/create()-like calls, and `Memory(status=...)` / `PromotionCandidate(status=...)`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Attribute) and leaf.attr == "status":
                        found.append(f"{path.relative_to(root)}:{node.lineno}")
        if isinstance(node, ast.Call) and _name(node.func) in MODELS_WITH_STATUS:
            if any(keyword.arg == "status" for keyword in node.keywords):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
        if isinstance(node, ast.Call) and _name(node.func) == "setattr" and len(node.args) >= 2:
            if isinstance(node.args[1], ast.Constant) and node.args[1].value == "status":
                found.append(f"{path.relative_to(root)}:{node.lineno}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in {"update", "create", "get_or_create", "update_or_create", "bulk_update"}:
                if any(
                    keyword.arg in {"status", "defaults"} and _mentions_status(keyword)
                    for keyword in node.keywords
                ):
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def _mentions_status(keyword: ast.keyword) -> bool:
    if keyword.arg == "status":
        return True
    return isinstance(keyword.value, ast.Dict) and any(
        isinstance(key, ast.Constant) and key.value == "status" for key in keyword.value.keys
    )


def test_only_the_transition_function_writes_status():
    offenders = [
        hit
        for path in ROOT.rglob("*.py")
        if path != OWNER and "migrations" not in path.parts
        for hit in status_writes(path)
    ]
    assert offenders == []


def test_the_scan_would_notice_a_stray_status_write(tmp_path):
    stray = tmp_path / "stray.py"
    stray.write_text(
        "memory.status = 'active'\n"
        "Memory.objects.filter(pk=1).update(status='active')\n"
        "Memory(subject='x', status='active').save()\n"
        "setattr(candidate, 'status', 'approved')\n"
    )
    assert sorted(status_writes(stray, root=tmp_path)) == [
        "stray.py:1",
        "stray.py:2",
        "stray.py:3",
        "stray.py:4",
    ]

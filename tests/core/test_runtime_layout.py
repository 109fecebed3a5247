"""``augjax/_runtime`` is split by concern: execution, targets, ragged batches and the store,
each a subpackage whose docstring says what it owns; no module sits at the top beside them,
and within ``_runtime`` the store and the targets never import the execution modules at load
time (execution uses them, not the other way round)."""

from __future__ import annotations

import ast
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[2] / "augjax" / "_runtime"
CONCERNS = {"execution", "targets", "ragged", "store"}


def test_runtime_holds_only_its_four_concerns():
    top = {p.name for p in RUNTIME.iterdir() if p.suffix == ".py" or p.is_dir()} - {"__pycache__"}
    assert top == {"__init__.py", *CONCERNS}


def test_each_concern_says_what_it_owns():
    for concern in CONCERNS:
        init = RUNTIME / concern / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc.split()) >= 8, f"{concern}: a docstring saying what it owns"
        assert [p.name for p in (RUNTIME / concern).glob("*.py")] != ["__init__.py"]


def _top_level_imports(path: Path) -> set[str]:
    """Modules imported at load time (statements at module level, not inside functions)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_store_and_targets_do_not_load_execution():
    for concern in ("store", "targets"):
        for path in (RUNTIME / concern).glob("*.py"):
            up = {m for m in _top_level_imports(path)
                  if m.startswith("augjax._runtime.execution")}
            assert not up, f"{path.relative_to(RUNTIME)} imports {sorted(up)} at load time"

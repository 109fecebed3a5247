"""Layers point down, and a package keeps its underscore modules to itself.

Every import in ``augjax/`` is read with ``ast``, deferred ones (inside functions, under
``TYPE_CHECKING``) included. Layers, low to high::

    errors < _core < kernels < _plugins < _runtime < catalog < chain < policies < dali
           < testing < _demo < cli

(``data``, ``ops``, ``config``, ``interop``, ``grain`` and the package's ``__init__`` are
placed in :data:`LAYER` with the reason). An import from a layer to a higher one is *upward*;
an import of another package's module whose name starts with an underscore
(``augjax.chain._element`` from ``policies``) is *private*.

``layer_debt.txt`` lists the violations main had when this test was written: each is debt of
the redesign, to be paid by handing the call down (the runtime installs what ``_core`` calls) or by
exposing the name in the package's ``__init__`` or a public module. The list only shrinks: a new
violation fails, and so does a listed one that is gone (delete its line).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "augjax"
DEBT = Path(__file__).with_name("layer_debt.txt")

#: The layer of each top-level part of augjax (higher imports lower).
LAYER = {
    "errors": 0,
    "data": 0,        # the bundled photos: NumPy and PIL only, imports nothing of augjax
    "_core": 1,
    "kernels": 2,
    "_plugins": 3,
    "ops": 3.5,       # the lookup namespace over the registry (augjax.ops.flip)
    "_runtime": 4,
    "jitting": 4.5,   # augjax.jit: jax.jit with augjax's options (kernels' boundaries)
    "catalog": 5,
    "chain": 6,
    "policies": 7,
    "config": 7.5,    # to_dict/from_dict of chains and policies
    "interop": 7.5,   # from_torchvision / from_albumentations build chains and policies
    "dali": 8,
    "grain": 8.5,     # grain transforms over chains (and the DALI-free path)
    "clips": 8.7,     # (N, T, H, W, C) clips and DALI sequences through any step
    "multiview": 8.7,  # views: groups of chains from one batch (arrays and one DALI crossing)
    "recipes": 8.8,   # DINO / SimCLR / BYOL views
    "calls": 8.9,     # what a step's calls run (clips, the runtime, DALI): handed down to _core
    "testing": 9,
    "__init__": 9.5,  # the package's face (augjax.*): re-exports every layer up to testing,
    "_demo": 10,      # and _demo and the CLI use it as a user does
    "cli": 11,
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (ROOT / rel).with_suffix(".py").is_file() or (ROOT / rel / "__init__.py").is_file()


def _targets(path: Path, tree: ast.AST) -> set[str]:
    """The augjax modules ``path`` imports (``from M import n`` counts as ``M.n`` where that is
    a module)."""
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "augjax"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base.split(".")[0] != "augjax":
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.add(full if _is_module(full) else base)
    return out


def _part(module: str) -> str:
    """The top-level part of augjax a module belongs to (``__init__`` for ``augjax`` itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _private(module: str) -> bool:
    """Whether ``module`` is an underscore module inside its part (``augjax.chain._element``)."""
    return any(p.startswith("_") for p in module.split(".")[2:])


def violations() -> set[str]:
    """Every upward and private import, as ``"kind importer -> imported"`` lines."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for target in _targets(path, tree):
            a, b = _part(importer), _part(target)
            if a == b:
                continue
            if LAYER[a] < LAYER[b]:
                found.add(f"upward {importer} -> {target}")
            if _private(target):
                found.add(f"private {importer} -> {target}")
    return found


def _debt() -> set[str]:
    lines = DEBT.read_text(encoding="utf-8").splitlines()
    return {ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")}


def test_every_part_of_augjax_has_a_layer():
    parts = {_part(_module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert parts <= set(LAYER), f"place these in LAYER: {sorted(parts - set(LAYER))}"


def test_the_walk_sees_deferred_and_relative_imports(tmp_path):
    """The reader itself: a deferred import inside a function and a relative one are seen."""
    source = ("def f():\n    from augjax.chain import _element\n"
              "from ..policies import tables\n")
    path = PACKAGE / "catalog" / "probe.py"
    got = _targets(path, ast.parse(source))
    assert got == {"augjax.chain._element", "augjax.policies.tables"}


def test_no_new_upward_or_private_import():
    new = sorted(violations() - _debt())
    assert not new, ("imports that point up a layer or into another package's underscore "
                     "module (expose the name in the package, or hand the call down):\n  "
                     + "\n  ".join(new))


def test_the_debt_list_only_shrinks():
    paid = sorted(_debt() - violations())
    assert not paid, "paid off: delete these lines of layer_debt.txt:\n  " + "\n  ".join(paid)

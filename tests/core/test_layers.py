"""Layers point down, and a package keeps its underscore modules to itself.

Every import in ``augjax/`` is read with ``ast``, deferred ones (inside functions, under
``TYPE_CHECKING``) included. Layers, low to high::

    errors < _core < kernels < _plugins < _runtime < dali < clips < fronts < calls < catalog
           < chain < policies < testing < _demo < cli

(``data``, ``ops``, ``config``, ``interop``, ``grain`` and the package's ``__init__`` are
placed in :data:`LAYER` with the reason). An import from a layer to a higher one is *upward*;
an import of another package's module whose name starts with an underscore
(``augjax.chain._element`` from ``policies``) is *private*.

``layer_debt.txt`` lists the violations main had when this test was written: each is debt of
the redesign, to be paid by moving the code to the layer that calls it or by exposing the name
in the package's ``__init__`` or a public module. The list only shrinks: a new violation fails,
and so does a listed one that is gone (delete its line).

Calls point down too, where imports cannot show them: no module below :mod:`augjax.calls`
holds a function of a higher layer (a table of callbacks installed from above), and the path
of a public call (``augjax.ops.flip(images, key=..., p=...)``) to the kernel, traced, goes
down, in at most 6 package crossings, never back into a package it left.
"""

from __future__ import annotations

import ast
import functools
import importlib
import sys
import types
from pathlib import Path

import pytest

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
    "dali": 4.6,      # the DALI bridge: a step as one jax_function operator (runtime below it)
    "clips": 4.7,     # (N, T, H, W, C) clips and DALI sequences through any step
    "volumes": 4.72,  # (N, D, H, W, C) volumes: the volume ops' runtime
    "volume_slices": 4.73,  # other steps on volumes, slice by slice (as clips)
    "fronts": 4.75,   # the front ends by input kind (images, clips): one table calls reads
    "calls": 4.8,     # the public calls: ops and steps as users call them, dispatching down
    "catalog": 5,
    "chain": 6,
    "policies": 7,
    "config": 7.5,    # to_dict/from_dict of chains and policies
    "interop": 7.5,   # from_torchvision / from_albumentations build chains and policies
    "grain_workers": 8.4,  # grain workers' set-up (JAX pinned to the CPU), importable without grain
    "view_groups": 8.6,  # a views' keys per view, runs of one step, a group's stacking
    "views_step": 8.6,  # a views as a Step: the protocol's members (refusing per-sample ones)
    "multiview": 8.7,  # views: groups of chains from one batch (arrays and one DALI crossing)
    "ragged_views": 8.7,  # views of images of different sizes (lists, DALI ragged batches)
    "views_dali": 8.7,  # views inside a DALI pipeline: the one jax_function crossing
    "grain_records": 8.75,  # what a grain record of each kind goes through (views too), no grain
    "grain": 8.76,    # grain transforms over chains and views (and the DALI-free path)
    "recipes": 8.8,   # DINO / SimCLR / BYOL views
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


# -- calls point down ------------------------------------------------------------------------
#: The parts a call may run below :mod:`augjax.calls` (every module of them is walked).
BELOW_CALLS = sorted(p for p, layer in LAYER.items() if layer < LAYER["calls"])


def _layer_of(module: str | None) -> float | None:
    if not module or module.split(".")[0] != "augjax":
        return None
    return LAYER.get(_part(module))


def _defined_in(value: object) -> str | None:
    """The module of the function ``value`` is (a bound method: its object's class; a partial:
    its function); None for anything that is not a function (classes, ops, arrays)."""
    if isinstance(value, functools.partial):
        value = value.func
    if isinstance(value, types.MethodType):
        return type(value.__self__).__module__
    if isinstance(value, (types.FunctionType, types.BuiltinMethodType)):
        return getattr(value, "__module__", None)
    return None


def calls_from_above() -> list[str]:
    """Functions of a higher layer held by a module below :mod:`augjax.calls`: a module global,
    or a value or key of a dict, list, tuple or set that one holds (a table of callbacks
    installed from above), as ``"holder.name -> function's module"`` lines."""
    found = []
    for name, module in sorted(sys.modules.items()):
        holder = _layer_of(name)
        if holder is None or _part(name) not in BELOW_CALLS or module is None:
            continue
        for attr, value in list(vars(module).items()):
            inner = [value]
            if isinstance(value, dict):
                inner += [*value.keys(), *value.values()]
            elif isinstance(value, (list, tuple, set, frozenset)):
                inner += list(value)
            for item in inner:
                source = _defined_in(item)
                layer = _layer_of(source)
                if layer is not None and layer > holder:
                    found.append(f"{name}.{attr} -> {source}")
    return found


def _load_the_layers_above() -> None:
    for name in ("augjax", "augjax.calls", "augjax.chain", "augjax.policies", "augjax.config",
                 "augjax.dali", "augjax.clips", "augjax.multiview", "augjax.testing"):
        importlib.import_module(name)


def test_no_table_of_calls_from_above():
    """The call table ``_core`` once read (``step_call``, filled by ``augjax/__init__`` with
    :mod:`augjax.calls`' functions) and the registry's hand-down to ``_core.spec`` are gone:
    after the layers above are imported and an op has been called, no module below
    ``augjax.calls`` holds a function of a higher layer."""
    import numpy as np

    import augjax
    from augjax._core import spec, step

    _load_the_layers_above()
    augjax.ops.flip(np.zeros((1, 4, 6, 3), np.uint8), key=_key(), p=0.5)
    found = calls_from_above()
    assert not found, "functions of a higher layer held below augjax.calls:\n  " + "\n  ".join(
        found)
    assert not hasattr(step, "step_call") and not hasattr(step, "install_calls")
    assert not hasattr(spec, "registered_op")


def test_the_walk_sees_a_table_installed_from_above(monkeypatch):
    """The walk itself: a dict in ``_core`` holding a function of ``augjax.calls`` is seen."""
    import augjax.calls
    from augjax._core import step

    monkeypatch.setattr(step, "_PROBE", {"call": augjax.calls.call_step}, raising=False)
    assert "augjax._core.step._PROBE -> augjax.calls" in calls_from_above()


def _key():
    import jax

    return jax.random.key(0)


def _holds(value: object, target: object, depth: int = 0) -> bool:
    """Whether ``value`` is ``target`` or holds it (containers, an op's ``params``)."""
    if value is target:
        return True
    if depth >= 4:
        return False
    if isinstance(value, dict):
        return any(_holds(v, target, depth + 1) for v in value.values())
    if isinstance(value, (tuple, list)):
        return any(_holds(v, target, depth + 1) for v in value[:64])
    fields = getattr(type(value), "__dataclass_fields__", None)
    if isinstance(fields, dict) and "params" in fields:
        try:
            return _holds(object.__getattribute__(value, "params"), target, depth + 1)
        except AttributeError:  # not set yet (inside its __init__)
            return False
    return False


def _handed(caller: types.FrameType, frame: types.FrameType) -> bool:
    """Whether ``frame`` runs a function its caller was handed: one it holds (an argument, a
    local or a closure cell, or in a container there), a method of an object it holds, or a
    partial or wrapper of one (a kernel a declaration holds, a function given to a
    combinator, ``jax.vmap(step.run)``)."""
    code, me = frame.f_code, frame.f_locals.get("self")
    for value in list(caller.f_locals.values()):
        items = [value]
        if isinstance(value, dict):
            items += list(value.values())
        elif isinstance(value, (list, tuple)):
            items += list(value[:64])
        for item in items:
            for _ in range(8):  # through partials, bound methods and wrappers (jax.vmap)
                if me is not None and (item is me or getattr(item, "__self__", None) is me):
                    return True
                func = getattr(item, "__func__", item)
                if getattr(func, "__code__", None) is code:
                    return True
                item = item.func if isinstance(item, functools.partial) else getattr(
                    item, "__wrapped__", None)
                if item is None:
                    break
    return False


def trace_route(call, target: object, kernel: types.CodeType):
    """Runs ``call`` under ``sys.setprofile`` and returns p's route: the augjax frames that
    take ``target`` as an argument (``self`` aside) up to the first entry of ``kernel``, with
    their callers, as ``{id: (caller's id, part, "module.function", handed)}`` in call order
    (``handed``: see :func:`_handed`), and whether ``kernel`` was entered."""
    route: dict[int, tuple[int | None, str, str, bool]] = {}
    live: dict[int, tuple[types.FrameType, int]] = {}
    ids = iter(range(1 << 30))
    done = [False]

    def ours(frame: types.FrameType) -> bool:
        return frame.f_globals.get("__name__", "").split(".")[0] == "augjax"

    def node(frame: types.FrameType) -> int:
        entry = live.get(id(frame))
        if entry is not None and entry[0] is frame:
            return entry[1]
        parent = frame.f_back
        while parent is not None and not ours(parent):
            parent = parent.f_back
        up = node(parent) if parent is not None else None
        n = next(ids)
        live[id(frame)] = (frame, n)
        module = frame.f_globals["__name__"]
        handed = parent is not None and _handed(parent, frame)
        route[n] = (up, _part(module), f"{module}.{frame.f_code.co_name}", handed)
        return n

    def profile(frame, event, arg):
        if done[0] or event != "call" or not ours(frame):
            return
        code = frame.f_code
        count = (code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 4)
                 + bool(code.co_flags & 8))
        args = [frame.f_locals.get(a) for a in code.co_varnames[:count]
                if a not in ("self", "cls")]
        if code is kernel or any(_holds(a, target) for a in args):
            node(frame)
            done[0] = code is kernel

    old = sys.getprofile()
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(old)
    return dict(sorted(route.items())), done[0]


def route_report(route: dict[int, tuple[int | None, str, str, bool]]) -> dict[str, list[str]]:
    """p's route read: ``crossings``, the calls into another package on the way to the kernel
    (the last frame); ``side`` those off that way (validating p); ``upward``, calls into a
    higher layer that the caller was not handed (a table's callback: the kernel a declaration
    holds, a function given to a combinator are handed); ``back_and_forth``, frames whose stack
    re-enters a package it left other than by a handed call."""
    out: dict[str, list[str]] = {"crossings": [], "side": [], "upward": [], "back_and_forth": []}
    way, m = set(), max(route)
    while m is not None:
        way.add(m)
        m = route[m][0]
    for n, (up, part, name, handed) in route.items():
        if up is None:
            continue
        caller = route[up]
        edge = f"{caller[2]} -> {name}"
        if caller[1] != part:
            out["crossings" if n in way else "side"].append(edge)
            if LAYER[part] > LAYER[caller[1]] and not handed:
                out["upward"].append(edge)
    for n in route:  # each frame's stack, root first, in runs of one package
        stack, m = [], n
        while m is not None:
            stack.append(m)
            m = route[m][0]
        runs = [m for i, m in enumerate(stack[::-1])
                if i == 0 or route[m][1] != route[stack[::-1][i - 1]][1]]
        for i, m in enumerate(runs):
            left = {route[r][1] for r in runs[:i]}
            again = f"{route[route[m][0]][2] if i else ''} -> {route[m][2]}"
            if route[m][1] in left and not route[m][3] and again not in out["back_and_forth"]:
                out["back_and_forth"].append(again)
    return out


def test_a_public_call_goes_down_to_the_kernel():
    """``augjax.ops.flip(images, key=..., p=...)``, traced (on a shape no other test compiles,
    so that the program is traced): ``p`` reaches the kernel in at most 6 package crossings,
    each into a lower layer but the last (the op's kernel, which its declaration holds), and
    no frame on the way is called back from a package it called but through a function it
    handed down. Before (the table in ``_core.step``): 6 crossings on the way and 2 validating
    p, 2 of them up a layer, ``_runtime -> _core`` re-entered; after: 5 and 2, none.
    """
    import numpy as np

    import augjax

    flip = augjax.ops.flip
    p = float("0.625")  # its own object: the route follows it by identity
    images = np.zeros((3, 7, 13, 3), np.uint8)  # a shape of its own
    route, entered = trace_route(lambda: flip(images, key=_key(), p=p), p, flip.kernel.__code__)
    assert entered, "the kernel was not traced (is this shape compiled elsewhere?)"
    report = route_report(route)
    assert report["crossings"] and report["side"]  # the way to the kernel, p's validation
    assert not report["upward"], report["upward"]
    assert not report["back_and_forth"], report["back_and_forth"]
    assert len(report["crossings"]) <= 6, report["crossings"]
    assert route[min(route)][2] == "augjax.calls.__call__"  # the public call is of calls

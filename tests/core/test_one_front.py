"""What the input kinds' front ends share is written once: the building of programs (with
their compiler options and store identity), the DALI seed draw, the placement of nodes, the checks of a call's ``key`` / ``seeds`` / ``seed`` / ``device``, the sets
of layouts, and no rank that guesses a kind. Read from ``augjax/`` with ``ast`` (docstrings and
comments do not count)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "augjax"

#: Layout names; a tuple, list, set or dict of them is a set of layouts.
LAYOUT_NAMES = {"HWC", "CHW", "FHWC", "FCHW"}


def _trees():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text())


def _strings(node: ast.AST) -> str:
    """The literal text of a string or f-string (its constant parts)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    return ""


def _where(predicate) -> dict[str, int]:
    found: dict[str, int] = {}
    for name, tree in _trees():
        for node in ast.walk(tree):
            if predicate(node):
                found[name] = found.get(name, 0) + 1
    return found


def _raised(text: str):
    """Nodes of ``raise X(f"... text ...")``."""
    def predicate(node):
        if not isinstance(node, ast.Raise) or not isinstance(node.exc, ast.Call):
            return False
        return any(text in _strings(a) for a in node.exc.args)
    return predicate


def test_dali_seeds_are_drawn_and_nodes_placed_in_one_place():
    draws = _where(lambda n: isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                   and n.func.attr == "uniform" and isinstance(n.func.value, ast.Attribute)
                   and n.func.value.attr == "random"
                   and getattr(n.func.value.value, "id", None) == "fn")
    assert draws == {"dali/_nodes.py": 1}, draws
    moves = _where(lambda n: isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                   and n.func.attr == "gpu" and not n.args)
    assert moves == {"dali/_nodes.py": 1}, moves


def test_programs_are_built_in_one_place():
    """Images, clips, views and volumes build their jitted, stored programs through one function
    (``build_program``), which picks each role's XLA options: no front end constructs a
    ``StoredProgram`` or chooses compiler options itself."""
    def calls(name):
        return lambda n: (isinstance(n, ast.Call)
                          and getattr(n.func, "id", getattr(n.func, "attr", None)) == name)

    assert _where(calls("StoredProgram")) == {"_runtime/execution/program.py": 1}
    for options in ("sampler_compiler_options", "boundary_compiler_options"):
        users = _where(calls(options))
        # augjax.jit (a user's own program) takes the apply options on purpose
        assert set(users) <= {"_runtime/execution/program.py", "kernels/boundary.py",
                              "jitting.py"}, (options, users)
    builders = _where(calls("build_program"))
    assert {"clips.py", "multiview.py", "volumes.py",
            "_runtime/execution/program.py"} <= set(builders)


def test_key_and_device_arguments_are_checked_in_one_place():
    for text in ("is for DALI pipelines", "'key' is for arrays", "argument 'device' expects"):
        assert _where(_raised(text)) == {"_runtime/execution/inputs.py": 1}, text


def test_layout_sets_are_named_once():
    def layout_set(node):
        items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
        if not isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) or not items:
            return False
        return all(isinstance(i, ast.Constant) and i.value in LAYOUT_NAMES for i in items)

    assert _where(layout_set) == {"_core/declaration.py": 1}, (
        "name them: augjax._core.declaration.LAYOUTS / CLIP_LAYOUTS")


def test_no_rank_says_a_kind():
    """No ``x.ndim == 5`` (or ``!= 5``) decides or checks clips: the kind says it
    (augjax._core.kinds), and batch ranks are checked by its check_rank."""
    def rank5(node):
        return (isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute)
                and node.left.attr == "ndim" and any(isinstance(c, ast.Constant) and c.value == 5
                                                     for c in node.comparators))

    # masks of rank 5 (an image batch's (N, K, ...) boxes of masks; a volume batch's masks
    # with a trailing channel): target shapes, not a kind
    assert _where(rank5) == {"_runtime/targets/masks.py": 1, "volumes.py": 1}

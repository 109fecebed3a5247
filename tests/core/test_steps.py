"""The Step protocol (``augjax._core.step.Step``): every step kind implements it, answers each
question as the op it wraps does, and the runtime asks nothing else of a step.

- every kind (a bound op, each composite, each policy) is a ``Step`` and has every member;
- a composite that reduces to one op (``compose(op)``, ``random_apply(op, 1.0)``,
  ``random_choice([op])``, ``some_of([op], 1)``) answers structure, randomness, application and
  geometry bitwise as the op alone, member by member, on a sample input;
- read with ``ast``: no runtime module reads a step's ``.spec`` (only ``BoundOp`` itself, in
  ``_runtime/execution/bound.py``, reads its declaration) and none branches with ``isinstance``
  on a step kind.
"""

from __future__ import annotations

import ast
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import images

import augjax
from augjax import compose, random_apply, random_choice, random_order, some_of
from augjax._core.meta import Meta
from augjax._core.step import Step, Structure
from augjax.errors import ParamError

ops = augjax.ops
PACKAGE = Path(__file__).resolve().parents[2] / "augjax"

#: The members of the protocol (what the runtime may ask of a step).
MEMBERS = sorted(n for n in vars(Step) if not n.startswith("_")) + ["__call__"]


def _kinds():
    op = ops.rotate.bind(degrees=(-30.0, 30.0))
    return {
        "op": op,
        "compose": compose(op, ops.flip),
        "random_apply": random_apply(op, 0.5),
        "random_choice": random_choice([op, ops.flip]),
        "some_of": some_of([op, ops.flip], 1),
        "random_order": random_order([op, ops.flip]),
        "rand_augment": augjax.rand_augment(),
        "trivial_augment_wide": augjax.trivial_augment_wide(),
        "auto_augment": augjax.auto_augment(),
        "augmix": augjax.augmix(),
    }


def test_the_protocol_has_the_four_questions():
    for member in ("after", "layouts", "inputs", "draw", "random", "run", "run_batch",
                   "matrix", "stages", "run_masks", "geometric"):
        assert member in MEMBERS


@pytest.mark.parametrize("kind", sorted(_kinds()))
def test_every_step_kind_is_a_step(kind):
    step = _kinds()[kind]
    assert isinstance(step, Step)
    missing = [m for m in MEMBERS if not hasattr(step, m)]
    assert not missing, f"{kind} lacks {missing}"
    s = Structure(16, 20, 3, "uint8", "HWC")
    out = step.after(s)
    assert isinstance(out, Structure) and out == s  # none of these changes the structure
    assert step.level == "sample" and step.inputs == ("images",)


def test_a_foreign_object_is_refused_by_name():
    with pytest.raises(ParamError, match="got object"):
        compose(object())


#: (op, the sample it is asked about): geometric and random; size-changing; dtype and layout.
OPS = {
    "rotate": (lambda: ops.rotate.bind(degrees=(-30.0, 30.0)), Structure(16, 20, 3, "uint8")),
    "random_crop": (lambda: ops.random_crop.bind(size=(8, 10)), Structure(16, 20, 3, "uint8")),
    "normalize": (lambda: ops.normalize.bind(chw=True), Structure(16, 20, 3, "uint8")),
}


#: Composites that reduce to one op, and how each finds the op's params (and key) in its own.
WRAPPED = {
    "compose": (lambda op: compose(op), lambda p: p["steps"][0],
                lambda k: jax.random.fold_in(k, 0)),
    "random_apply": (lambda op: random_apply(op, 1.0), lambda p: p["op"], lambda k: k),
    "random_choice": (lambda op: random_choice([op]), lambda p: p["ops"][0], lambda k: k),
    "some_of": (lambda op: some_of([op], 1), lambda p: p["ops"][0],
                lambda k: jax.random.fold_in(k, 0)),
    "random_order": (lambda op: random_order([op]), lambda p: p["ops"][0],
                     lambda k: jax.random.fold_in(k, 0)),
}


def _same(a, b) -> bool:
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    return ta == tb and all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(la, lb))


#: (composite, op): random_apply, some_of and random_order take only ops that keep the
#: structure (rotate).
CASES = [(kind, name) for kind in sorted(WRAPPED) for name in sorted(OPS)
         if kind in ("compose", "random_choice") or name == "rotate"]


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "name"), CASES)
def test_a_composite_of_one_op_answers_as_the_op(kind, name):
    make, s = OPS[name]
    op = make()
    wrap, inner, key_of = WRAPPED[kind]
    step = wrap(op)
    # structure
    assert step.after(s) == op.after(s)
    assert step.after(s._replace(layout="CHW")) == op.after(s._replace(layout="CHW"))
    assert step.layouts == op.layouts
    assert step.geometric == op.geometric
    # randomness
    key = jax.random.key(7)
    meta = Meta(s.height, s.width, s.channels, s.dtype)
    params = step.draw(key, meta)
    assert _same(inner(params), op.draw(key_of(key), meta))
    # application
    image = jnp.asarray(images(1, s.height, s.width)[0])
    assert _same(step.run(image, params), op.run(image, inner(params)))
    assert _same(step.run_checked(image, params, "outer"),
                 op.run_checked(image, inner(params), "outer/op"))
    # geometry and targets
    if op.geometric:
        assert _same(step.matrix(params, meta), op.matrix(inner(params), meta))
        assert _same(step.stages(params, meta), op.stages(inner(params), meta))
    mask = jnp.concatenate([jnp.asarray(images(1, s.height, s.width, 1)[0]),
                            jnp.full((s.height, s.width, 1), 255, jnp.uint8)], axis=-1)
    if op.follow.masks in ("keep", "kernel"):
        assert _same(step.run_masks(mask, params), op.run_masks(mask, inner(params)))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["rand_augment", "trivial_augment_wide", "auto_augment",
                                  "augmix"])
def test_a_policy_runs_by_its_members(kind):
    """The runtime's sample is the member ``draw`` per sample, its apply the member ``run``."""
    policy = _kinds()[kind]
    x = images(3, 16, 20)
    keys = jax.random.split(jax.random.key(1), 3)
    params = policy.sample(x, key=keys)
    meta = Meta(16, 20, 3, "uint8")
    # jitted: one program (eagerly, each primitive of every member's draw compiles alone)
    drawn = jax.jit(jax.vmap(lambda k: policy.draw(jax.random.fold_in(k, 0), meta)))(keys)
    assert jax.tree_util.tree_structure(drawn) == jax.tree_util.tree_structure(params)
    for a, b in zip(jax.tree_util.tree_leaves(drawn), jax.tree_util.tree_leaves(params)):
        assert a.shape == b.shape and a.dtype == b.dtype
        if jnp.issubdtype(a.dtype, jnp.integer) or a.dtype == jnp.bool_:
            assert np.array_equal(a, b)  # the choices, exactly
    out = jax.jit(jax.vmap(policy.run))(jnp.asarray(x), params)
    assert out.shape == x.shape and out.dtype == x.dtype
    assert np.array_equal(np.asarray(policy.apply(x, params=params)), np.asarray(out))


# -- the runtime asks only the protocol ----------------------------------------------------------
#: Modules that run steps: the runtime, the calls handed down to it, clips, DALI, the
#: composites' element machinery and configs (``to_dict`` writes a step through ``kind`` and
#: ``to_config``). ``_runtime/execution/bound.py`` is the op's own implementation.
RUNNERS = sorted({*(PACKAGE / "_runtime").rglob("*.py"), *(PACKAGE / "dali").glob("*.py"),
                  PACKAGE / "calls.py", PACKAGE / "fronts.py", PACKAGE / "clips.py",
                  PACKAGE / "multiview.py", PACKAGE / "views_dali.py",
                  PACKAGE / "grain.py", *(PACKAGE / "chain" / n for n in (
                      "_element.py", "_containers.py", "_random.py", "_order.py", "_composite.py",
                      "_invert.py", "_config.py"))}
                 - {PACKAGE / "_runtime" / "execution" / "bound.py"})

#: The concrete step classes: the runtime never branches on them.
KINDS = {"BoundOp", "Composite", "Chain", "RandomApply", "RandomChoice", "SomeOf",
         "RandomOrder", "Policy",
         "LayeredPolicy", "RandAugment", "TrivialAugmentWide", "AutoAugment", "AugMix"}


def _reads_of_spec(tree: ast.AST) -> list[int]:
    """Lines that read ``x.spec`` or ``getattr(x, "spec", ...)``, in order."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "spec":
            out.append(node.lineno)
        elif (isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
                "getattr", "hasattr") and len(node.args) > 1
              and isinstance(node.args[1], ast.Constant) and node.args[1].value == "spec"):
            out.append(node.lineno)
    return sorted(out)


def _kind_branches(tree: ast.AST) -> list[int]:
    """Lines with ``isinstance(x, <a step class>)``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" \
                and len(node.args) == 2:
            names = {getattr(n, "id", getattr(n, "attr", None)) for n in ast.walk(node.args[1])}
            if names & KINDS:
                out.append(node.lineno)
    return out


def test_the_walk_sees_spec_reads_and_kind_branches():
    tree = ast.parse("a = step.spec.level\nb = getattr(s, 'spec', None)\n"
                     "if isinstance(el, (BoundOp, int)): pass\nc = tspec.names\n")
    assert _reads_of_spec(tree) == [1, 2] and _kind_branches(tree) == [3]


@pytest.mark.parametrize("path", RUNNERS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_runners_ask_only_the_protocol(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    assert not _reads_of_spec(tree), f"reads a step's .spec at lines {_reads_of_spec(tree)}"
    assert not _kind_branches(tree), f"isinstance on a step kind at lines {_kind_branches(tree)}"

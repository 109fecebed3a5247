"""help() on an op: its call and its own documentation."""

from __future__ import annotations

import augjax


def test_help_on_an_op_shows_its_call_and_its_own_doc():
    """``help(augjax.ops.X)`` / ``op.__doc__``: the op's call with its parameters and defaults,
    then its documentation, for every registered op (not the generic class docstring)."""
    import pydoc

    for name in augjax.list_ops():
        op = getattr(augjax.ops, name)
        first = op.__doc__.splitlines()[0]
        assert first.startswith(f"{name}({', '.join(op.inputs)}, *, key=None"), first
        for param, spec in op.params.items():
            assert (f" {param}," in first or f" {param})" in first
                    or f" {param}={spec.default!r}" in first), (name, param, first)
        assert op.doc.strip().splitlines()[0] in op.__doc__
    text = pydoc.render_doc(augjax.ops.rotate, renderer=pydoc.plaintext)
    assert "rotate(images, *, key=None, degrees=" in text and augjax.ops.rotate.doc[:40] in text

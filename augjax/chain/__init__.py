"""Chains and composites: ``compose``, ``random_apply``, ``random_choice``, ``some_of``.

Each runs as one program (one jitted function on arrays, one ``jax_function`` in DALI) and
decides per sample, branch-free. See :mod:`augjax.chain._containers` for the key scheme.
``step.sample(images, key=...)`` records each sample's decisions and every element's params;
``step.apply(images, params=...)`` replays them; :func:`invert` undoes the geometric part.
"""

from augjax.chain._composite import Composite
from augjax.chain._containers import Chain, Sequential, compose
from augjax.chain._random import (
    RandomApply,
    RandomChoice,
    SomeOf,
    random_apply,
    random_choice,
    some_of,
)
from augjax.chain._invert import invert, matrices

__all__ = [
    "Chain",
    "Composite",
    "RandomApply",
    "RandomChoice",
    "Sequential",
    "SomeOf",
    "compose",
    "invert",
    "matrices",
    "random_apply",
    "random_choice",
    "some_of",
]

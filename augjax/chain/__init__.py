"""Chains and composites: ``compose``, ``random_apply``, ``random_choice``, ``some_of``,
``random_order``.

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
from augjax.chain._order import RandomOrder, random_order

# For the config module and the policies' configs (augjax.config, augjax.policies):
from augjax.chain._config import (
    CONFIG_VERSION,
    Node,
    from_dict,
    from_json,
    json_value,
    to_dict,
    to_json,
)

__all__ = [
    "CONFIG_VERSION",
    "Chain",
    "Composite",
    "RandomApply",
    "RandomChoice",
    "RandomOrder",
    "Sequential",
    "SomeOf",
    "compose",
    "invert",
    "from_dict",
    "from_json",
    "json_value",
    "matrices",
    "Node",
    "random_apply",
    "random_choice",
    "random_order",
    "some_of",
    "to_dict",
    "to_json",
]

"""Automatic-augmentation policies, each ONE composite step that picks ops per sample inside
one compiled program (``lax.switch`` under ``vmap``, never DALI conditionals):

- :func:`rand_augment` (torchvision, timm and DALI styles), :func:`trivial_augment_wide`,
  :func:`auto_augment` (torchvision's imagenet/cifar10/svhn, timm's v0/v0r/original/originalr/3a),
  :func:`augmix` (torchvision and timm styles), and :func:`from_timm` for timm config strings.
- :mod:`augjax.policies.tables` holds each reference's op space (overrides of the ops' own
  magnitude maps) and sub-policy tables; :class:`augjax.MagnitudeMap` is the level -> value
  model (timm's 0..10 scale versus the torchvision/DALI bins is explicit there).

Each factory also takes the images first and applies the policy at once, as DALI's
``auto_aug`` functions do: ``rand_augment(images, n=2, m=9)`` in a pipeline,
``rand_augment(x, key=key, n=2, m=9)`` on arrays. :func:`describe_policy` (``augjax info
rand_augment``) gives the defaults, scale and op space of a configuration.

``policy.sample(images, key=...)`` returns each sample's decisions (op indices into
``policy.op_names``, levels, signs, applied flags) and every branch's params (``branches``,
one per entry of the space, the magnitude already turned into the op's parameter value): the
same draws as ``policy(images, key=...)``; ``policy.apply(images, params=...)`` replays them.
"""

from augjax.policies._augmix import AugMix, augmix
from augjax.policies._autoaugment import POLICIES, AutoAugment, auto_augment
from augjax.policies._base import Policy
from augjax.policies._describe import FACTORIES, describe_policy, policy_summaries
from augjax.policies._randaugment import (
    RandAugment,
    TrivialAugmentWide,
    rand_augment,
    trivial_augment_wide,
)
from augjax.policies.timm import from_timm

__all__ = [
    "POLICIES",
    "AugMix",
    "FACTORIES",
    "AutoAugment",
    "Policy",
    "RandAugment",
    "TrivialAugmentWide",
    "augmix",
    "describe_policy",
    "auto_augment",
    "from_timm",
    "policy_summaries",
    "rand_augment",
    "trivial_augment_wide",
]

"""The performance targets, each with where its measured ratio or time sits in a result file.

``report.py`` reads the newest result files and evaluates every target here; the CPU suite
writes its groups' ratios under the same names. A ``ratio`` target compares augjax with a peer
measured in the same run (augjax's time / the peer's time, so lower is better, met when
<= ``limit``); a ``ms`` target is augjax's own time (met when <= ``limit``); a ``speed`` target
is a throughput ratio (augjax's images/s / the baseline's, met when >= ``limit``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    id: str
    source: str  # "cpu", "gpu" or "e2e": which result file holds it
    text: str
    kind: str  # "ratio" (<= limit), "ms" (<= limit) or "speed" (>= limit)
    limit: float
    where: str  # the group (cpu), row key (gpu) or summary key (e2e)


CPU = [
    Target("cpu-randaugment", "cpu",
           "RandAugment(n=2, m=9) through a DALI CPU pipeline no slower than DALI's auto_aug",
           "ratio", 1.0, "policy/rand_augment"),
    Target("cpu-recipe-dali", "cpu",
           "timm-style recipe through DALI no slower than DALI's native flip + rand_augment + "
           "color_twist + crop_mirror_normalize", "ratio", 1.0, "recipe/dali"),
    Target("cpu-recipe-arrays", "cpu",
           "the recipe on arrays no slower than timm's per-image transforms, one worker per core",
           "ratio", 1.0, "recipe/arrays-vs-timm"),
    Target("cpu-randaugment-space", "cpu",
           "RandAugment over its 14-op space <= 1.5x over 3 ops (arrays)", "ratio", 1.5,
           "policy/rand_augment-space"),
]

GPU = [
    Target("gpu-rand-augment", "gpu", "arrays B=256: RandAugment(n=2, m=9) <= 0.6 ms", "ms",
           0.6, "arrays/policy/rand_augment"),
    Target("gpu-trivial-augment", "gpu", "arrays B=256: TrivialAugmentWide <= 0.4 ms", "ms", 0.4,
           "arrays/policy/trivial_augment_wide"),
    Target("gpu-auto-augment", "gpu", "arrays B=256: AutoAugment <= 0.6 ms", "ms", 0.6,
           "arrays/policy/auto_augment"),
    Target("gpu-augmix", "gpu", "arrays B=256: AugMix (defaults) <= 2.0 ms", "ms", 2.0,
           "arrays/policy/augmix"),
    Target("gpu-equalize", "gpu", "arrays B=256: equalize <= 0.3 ms", "ms", 0.3,
           "arrays/op/equalize"),
    Target("gpu-every-op", "gpu",
           "arrays B=256: every core and contrib op <= 10x the copy floor or no slower than its "
           "fastest peer", "ops", 10.0, "arrays/op"),
    *(Target(f"gpu-randaugment-dali-b{b}", "gpu",
             f"through DALI, B={b}: RandAugment <= 0.25x DALI auto_aug", "ratio", 0.25,
             f"dali/B={b}/policy/rand_augment") for b in (32, 256, 1024)),
    *(Target(f"gpu-rrc-dali-b{b}", "gpu",
             f"through DALI, B={b}: random_resized_crop no slower than DALI's", "ratio", 1.0,
             f"dali/B={b}/op/random_resized_crop") for b in (256, 1024)),
]

E2E = [
    Target("e2e-chain-b256-dynamic", "e2e",
           "B=256, dynamic executor: augjax chain >= 0.95x decode + crop", "speed", 0.95,
           "B=256 dynamic/augjax_chain_vs_decode_crop"),
    Target("e2e-chain-b256-legacy", "e2e",
           "B=256, exec_dynamic=False: augjax chain >= 0.95x decode + crop", "speed", 0.95,
           "B=256 legacy/augjax_chain_vs_decode_crop"),
    Target("e2e-randaug-b256", "e2e",
           "B=256, dynamic: with RandAugment >= 0.80x decode + crop", "speed", 0.80,
           "B=256 dynamic/augjax_randaug_vs_decode_crop"),
    Target("e2e-randaug-vs-dali-b256", "e2e",
           "B=256, dynamic: with RandAugment >= 4x DALI's auto_aug pipeline", "speed", 4.0,
           "B=256 dynamic/augjax_randaug_vs_dali_randaug"),
    Target("e2e-chain-b64", "e2e", "B=64, dynamic: augjax chain >= 0.95x decode + crop",
           "speed", 0.95, "B=64 dynamic/augjax_chain_vs_decode_crop"),
    Target("gpu-perop-dali-b32", "gpu",
           "through DALI, B=32: every op no more than 1.5x DALI native", "ops-dali", 1.5,
           "dali/B=32/op"),
]

ALL = CPU + GPU + E2E

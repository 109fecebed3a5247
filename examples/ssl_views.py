"""A self-supervised training step on augjax views: DINO's multi-crop or SimCLR/BYOL's two views.

    python examples/ssl_views.py                        # DINO, DALI CPU pipeline, 3 steps
    python examples/ssl_views.py --recipe simclr --steps 5
    python examples/ssl_views.py --source arrays         # no DALI: views on jax.Arrays
    python examples/ssl_views.py --device gpu           # DALI GPU pipeline (mixed decode)

The data are augjax's bundled photos. In DALI: ``readers.file -> decoders.image``, then
``recipe(images, ragged=True)``: the photos keep their own sizes and aspect ratios (each view's
crop window is drawn from its image's true size, as DINO's and SimCLR's code do), and ONE
``jax_function`` makes every view, its outputs ``{"global": (B, 2, 224, 224, 3), "local":
(B, 8, 96, 96, 3)}`` (DINO) or ``{"views": (B, 2, 224, 224, 3)}`` (SimCLR, BYOL), normalized
float32. The model is deliberately tiny (pooled colour statistics -> a linear projection), so
that the example shows the data flow, not a network: the losses are DINO's (student on every view
against a centred, sharpened teacher on the global views, an EMA of the student) and SimCLR's
NT-Xent (BYOL's predictor is left out: the same NT-Xent step serves its two views here).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

FEATURES, DIM = 6, 16


def make_recipe(name: str, global_size: int, local_size: int, local_count: int):
    import augjax

    if name == "dino":
        return augjax.recipes.dino(global_size=global_size, local_size=local_size,
                                   local_count=local_count)
    factory = {"simclr": augjax.recipes.simclr, "byol": augjax.recipes.byol}[name]
    return factory(size=global_size)


def dali_batches(recipe, batch: int, size: int, device: str, seed: int):
    """A DALI pipeline of the views of the bundled photos, decoded at their own sizes
    (``size`` is the arrays' source size only); yields ``{group: np.ndarray}``."""
    from nvidia.dali import fn, pipeline_def, types

    import augjax.data

    files = [str(p) for p in augjax.data.sample_paths()]
    gpu = device == "gpu"

    @pipeline_def(batch_size=batch, num_threads=2, device_id=0 if gpu else None, seed=seed)
    def pipe():
        jpegs, _ = fn.readers.file(files=files, random_shuffle=True, name="reader")
        images = fn.decoders.image(jpegs, device="mixed" if gpu else "cpu",
                                   output_type=types.RGB)
        out = recipe(images, ragged=True)  # photos of their own sizes: no resize first
        return tuple(out[name] for name in recipe.names)

    p = pipe()
    p.build()
    while True:
        outs = p.run()
        yield {name: np.array(o.as_cpu().as_tensor() if gpu else o.as_tensor())
               for name, o in zip(recipe.names, outs)}


def array_batches(recipe, batch: int, size: int | None, seed: int):
    """The same views on arrays, one key per step: the bundled photos at their own sizes, a
    list of images of different sizes (each view's crop drawn from its photo's true size, as
    in DALI), or with ``size`` the photos cut to ``size x size`` squares, one batch array."""
    import jax

    import augjax.data

    photos = list(augjax.data.sample_images(size))
    images = [photos[i % len(photos)] for i in range(batch)]
    if size is not None:
        images = np.stack(images)
    key = jax.random.key(seed)
    while True:
        key, sub = jax.random.split(key)
        yield recipe(images, key=sub)


def init(seed: int = 0):
    import jax

    w = jax.random.normal(jax.random.key(seed), (FEATURES, DIM)) * 0.5
    return {"w": w, "b": jax.numpy.zeros(DIM)}


def embed(params, views):
    """``(..., h, w, 3)`` views -> ``(..., DIM)``: channel means and stds, projected."""
    import jax.numpy as jnp

    stats = jnp.concatenate([views.mean((-3, -2)), views.std((-3, -2))], -1)
    return jnp.tanh(stats @ params["w"] + params["b"])


def dino_loss(student, teacher, center, views, t_student=0.1, t_teacher=0.04):
    """DINO: each global view's teacher distribution against the student's on every other view."""
    import jax

    glob = views["global"]                                       # (B, 2, h, w, 3)
    crops = [glob[:, i] for i in range(glob.shape[1])]
    crops += [views["local"][:, i] for i in range(views["local"].shape[1])]
    t = [jax.nn.softmax((embed(teacher, glob[:, i]) - center) / t_teacher) for i in range(2)]
    t = [jax.lax.stop_gradient(x) for x in t]
    s = [jax.nn.log_softmax(embed(student, c) / t_student) for c in crops]
    terms = [-(ti * sj).sum(-1).mean() for i, ti in enumerate(t)
             for j, sj in enumerate(s) if i != j]
    return sum(terms) / len(terms)


def nt_xent(params, views, temperature=0.5):
    """SimCLR's NT-Xent over the two views of each image."""
    import jax
    import jax.numpy as jnp

    v = views["views"]
    z = jnp.concatenate([embed(params, v[:, 0]), embed(params, v[:, 1])])
    z = z / jnp.linalg.norm(z, axis=-1, keepdims=True).clip(1e-6)
    n = v.shape[0]
    logits = z @ z.T / temperature - jnp.eye(2 * n) * 1e9
    target = jnp.concatenate([jnp.arange(n) + n, jnp.arange(n)])
    return -jnp.take_along_axis(jax.nn.log_softmax(logits), target[:, None], 1).mean()


def train(args) -> list[float]:
    import jax
    import jax.numpy as jnp

    recipe = make_recipe(args.recipe, args.global_size, args.local_size, args.local_count)
    if args.source == "dali":
        batches = dali_batches(recipe, args.batch, args.size, args.device, args.seed)
    else:
        batches = array_batches(recipe, args.batch, args.size, args.seed)
    student = init(0)
    teacher = jax.tree_util.tree_map(jnp.copy, student)
    center = jnp.zeros(DIM)

    @jax.jit
    def step_dino(student, teacher, center, views):
        loss, grads = jax.value_and_grad(dino_loss)(student, teacher, center, views)
        student = jax.tree_util.tree_map(lambda p, g: p - args.lr * g, student, grads)
        teacher = jax.tree_util.tree_map(lambda t, s: 0.996 * t + 0.004 * s, teacher, student)
        center = 0.9 * center + 0.1 * embed(teacher, views["global"]).mean((0, 1))
        return student, teacher, center, loss

    @jax.jit
    def step_pair(params, views):
        loss, grads = jax.value_and_grad(nt_xent)(params, views)
        return jax.tree_util.tree_map(lambda p, g: p - args.lr * g, params, grads), loss

    losses = []
    for i in range(args.steps):
        views = {k: jnp.asarray(v) for k, v in next(batches).items()}
        if i == 0:
            print("views:", {k: (tuple(v.shape), str(v.dtype)) for k, v in views.items()})
        if args.recipe == "dino":
            student, teacher, center, loss = step_dino(student, teacher, center, views)
        else:
            student, loss = step_pair(student, views)
        losses.append(float(loss))
        print(f"step {i}: loss {losses[-1]:.4f}")
    return losses


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recipe", choices=("dino", "simclr", "byol"), default="dino")
    ap.add_argument("--source", choices=("dali", "arrays"), default="dali")
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", type=int, default=None,
                    help="--source arrays: the photos cut to size x size squares (default: "
                         "each at its own size, a list; DALI decodes them at their own sizes)")
    ap.add_argument("--global-size", type=int, default=224)
    ap.add_argument("--local-size", type=int, default=96)
    ap.add_argument("--local-count", type=int, default=8)  # augjax.recipes.dino's, DINO's
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args(argv)


def main(argv=None) -> int:
    losses = train(parse(argv))
    finite = all(np.isfinite(losses))
    print("losses finite" if finite else "a loss is not finite")
    return 0 if finite else 1


if __name__ == "__main__":
    sys.exit(main())

"""Train a small flax model on grain batches augmented by augjax: per record in grain's workers
(CPU), per batch on the device (the accelerator where there is one).

    python examples/grain_train.py                       # 2 workers, 20 steps, batch 16
    python examples/grain_train.py --workers 0 --steps 5 --check-resume

The data are augjax's bundled photos, decoded with PIL in the data source (8 JPEGs of 5 sizes,
repeated); labels are the photo's index. The pipeline:

1. ``MapDataset.source(...).shuffle(seed).repeat()``: grain's own order and epochs;
2. ``map_with_index(augjax.grain.WithIndex())``: each record carries its global index;
3. ``random_map(augjax.grain.RandomMap(crop_flip))``: random resized crop to one size and a
   flip, one record at a time on the CPU, in grain's worker processes (pinned to the CPU: no
   worker takes accelerator memory), keyed by grain's per-record generator;
4. ``batch`` and ``mp_prefetch`` (workers), then ``map(augjax.grain.BatchAugment(...))``: colour
   jitter, mixup and normalisation on the device, in the main process, keyed by index and epoch;
5. a jitted flax/optax training step on the soft labels.

``--check-resume`` saves the training iterator's state half-way, trains on, then restores the
state in a new iterator and checks that it gives the remaining batches bitwise (exit 1 if not).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def _parse_flags_for_grain() -> None:
    """grain's workers read absl flags, which only ``absl.app.run`` parses."""
    import absl.flags

    if not absl.flags.FLAGS.is_parsed():
        absl.flags.FLAGS.mark_as_parsed()


class PhotoSource:
    """grain random-access source: augjax's bundled JPEGs decoded with PIL, repeated ``repeat``
    times; record = ``{"image": (H, W, 3) uint8, "label": int32}``."""

    def __init__(self, repeat: int = 4) -> None:
        import augjax.data

        self.paths = [str(p) for p in augjax.data.sample_paths()]
        self.repeat = repeat

    def __len__(self) -> int:
        return len(self.paths) * self.repeat

    def __getitem__(self, index: int) -> dict:
        from PIL import Image

        label = index % len(self.paths)
        with Image.open(self.paths[label]) as im:
            image = np.asarray(im.convert("RGB"))
        return {"image": image, "label": np.int32(label)}


NUM_CLASSES = 8


def build(args, source):
    """The grain pipeline (an IterDataset) and the device-side batch transform."""
    import grain

    import augjax
    import augjax.grain

    per_record = augjax.compose(augjax.ops.random_resized_crop.bind(size=args.size),
                                augjax.ops.flip.bind(p=0.5))
    per_batch = augjax.compose(
        augjax.ops.color_jitter.bind(brightness=0.4, contrast=0.4, saturation=0.4),
        augjax.ops.mixup.bind(alpha=0.2, num_classes=NUM_CLASSES),
        augjax.ops.to_float,
    )
    ds = (grain.MapDataset.source(source).shuffle(seed=args.seed).repeat()
          .map_with_index(augjax.grain.WithIndex())
          .random_map(augjax.grain.RandomMap(per_record), seed=args.seed)
          .batch(args.batch, drop_remainder=True)
          # one thread and two batches ahead per worker: the workers are the parallelism
          # (grain's defaults, 16 threads and 500 batches ahead, crowd the main process)
          .to_iter_dataset(grain.ReadOptions(num_threads=1, prefetch_buffer_size=2)))
    if args.workers:
        ds = ds.mp_prefetch(grain.MultiprocessingOptions(num_workers=args.workers),
                            worker_init_fn=augjax.grain.worker_init)
    return ds.map(augjax.grain.BatchAugment(per_batch, seed=args.seed, epoch_size=len(source)))


def make_train_step(size: int):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import optax

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Conv(16, (3, 3), strides=(2, 2))(x))
            x = nn.relu(nn.Conv(32, (3, 3), strides=(2, 2))(x))
            return nn.Dense(NUM_CLASSES)(x.mean(axis=(1, 2)))

    model = Net()
    # jitted: one program for the whole initialisation (eagerly, each initialiser's random
    # draws compile a program of their own: ~30 small compiles)
    params = jax.jit(model.init)(jax.random.key(0), jnp.zeros((1, size, size, 3)))
    tx = optax.adamw(1e-3)
    opt_state = tx.init(params)

    @jax.jit
    def step(params, opt_state, images, soft_labels):
        def loss_fn(p):
            logits = model.apply(p, images)
            return optax.softmax_cross_entropy(logits, soft_labels).mean()

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return step, params, opt_state


def train(args) -> tuple[list[float], bool | None]:
    """Runs ``args.steps`` steps; returns the losses and, with ``args.check_resume``, whether
    the batches after the state saved half-way come back bitwise from a new iterator."""
    step, params, opt_state = make_train_step(args.size)
    source = PhotoSource()
    iterator = iter(build(args, source))
    losses, state, rest = [], None, []
    try:  # closed in the end: its worker processes and their shared memory go with it
        for i in range(args.steps):
            if args.check_resume and i == args.steps // 2:
                state = iterator.get_state()
            batch = next(iterator)
            if state is not None:
                rest.append(batch)
            params, opt_state, loss = step(params, opt_state, batch["image"], batch["label"])
            losses.append(float(loss))
    finally:
        iterator.close()
    if state is None:
        return losses, None
    resumed = iter(build(args, source))
    try:
        resumed.set_state(state)
        again = [next(resumed) for _ in rest]
    finally:
        resumed.close()
    return losses, all(np.array_equal(np.asarray(a[k]), np.asarray(b[k]))
                       for a, b in zip(rest, again) for k in ("image", "label", "index"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="grain worker processes")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--size", type=int, default=64, help="crop size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check-resume", action="store_true")
    args = parser.parse_args(argv)
    _parse_flags_for_grain()
    losses, same = train(args)
    print(f"{args.steps} steps, loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    if args.check_resume:
        print("resume: bitwise equal" if same else "resume: DIFFERENT batches")
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""PyTorch training on augjax batches: a DALI pipeline with augjax ops feeds DALI's PyTorch
iterator, and a torch model trains on its batches (boxes included).

    python examples/pytorch_train.py                      # CPU, the sample dataset, 2 epochs
    python examples/pytorch_train.py --device gpu         # decode, augment on GPU 0: cuda tensors
    python examples/pytorch_train.py --root DIR --epochs 5

The pipeline is examples/detection.py's: ``fn.readers.coco`` (JPEGs of different sizes, XYXY
boxes), ``random_resized_crop`` of the ragged batch, flip, affine, colour jitter, boxes
following every op (padded to ``M`` per image, ``boxes_valid`` flags). What is PyTorch's:

1. ``nvidia.dali.plugin.pytorch.DALIGenericIterator`` runs the pipeline unchanged and yields
   ``[{"images": uint8 (N, S, S, 3), "boxes": float32 (N, M, 4), "boxes_valid": bool (N, M),
   "classes": int32 (N, M)}]`` as torch tensors (on the pipeline's device).
2. The epoch's last batch: the reader pads it (``pad_last_batch=True``) so augjax's program sees
   one batch size, and ``augjax.dali.trim_epoch`` cuts the padded copies off (the iterator's
   ``LastBatchPolicy.FILL``; ``LastBatchPolicy.PARTIAL``, ``--partial``, does the same in DALI).
3. NHWC uint8 -> NCHW float: ``images.permute(0, 3, 1, 2).float() / 255``, then normalised.
4. The loss uses only valid boxes: a tiny CNN predicts, per image, the class and the normalised
   box of its largest valid object (a stand-in for a detector's targets; torchvision's
   detection models take ``[{"boxes": b[v], "labels": c[v]} ...]`` built the same way).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from detection import chain, pad_boxes  # examples/detection.py, beside this file
from sample_dataset import make_dataset

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
CLASSES = 4  # 0: no valid box; 1..3 the sample dataset's classes


def build_pipeline(root: str | Path, *, batch_size: int = 3, size: int = 64, max_boxes: int = 4,
                   device: str = "cpu", seed: int = 0, num_threads: int = 2):
    """The DALI pipeline (not built: the iterator builds it); its reader pads the last batch."""
    from nvidia.dali import fn, pipeline_def, types

    root = Path(root)

    @pipeline_def(batch_size=batch_size, num_threads=num_threads,
                  device_id=0 if device == "gpu" else None, seed=seed)
    def pipe():
        jpegs, boxes, classes = fn.readers.coco(
            file_root=str(root / "images"), annotations_file=str(root / "annotations.json"),
            ltrb=True, random_shuffle=True, pad_last_batch=True, name="reader")
        images = fn.decoders.image(jpegs, device="mixed" if device == "gpu" else "cpu",
                                   output_type=types.RGB)
        boxes, classes, count = pad_boxes(boxes, classes, max_boxes)
        out = chain(size)(images, boxes=boxes, boxes_valid=count)
        return out["images"], out["boxes"], out["boxes_valid"], classes

    return pipe()


def make_iterator(pipe, *, partial: bool = False):
    """DALI's PyTorch iterator over the pipeline: one pass per epoch (``auto_reset``)."""
    from nvidia.dali.plugin.base_iterator import LastBatchPolicy
    from nvidia.dali.plugin.pytorch import DALIGenericIterator

    policy = LastBatchPolicy.PARTIAL if partial else LastBatchPolicy.FILL
    return DALIGenericIterator([pipe], ["images", "boxes", "boxes_valid", "classes"],
                               reader_name="reader", last_batch_policy=policy, auto_reset=True)


def epoch(iterator, *, partial: bool = False):
    """One epoch of batches as dicts of tensors, the last one with the epoch's real samples only
    (``trim_epoch`` cuts the reader's padding; with ``partial`` the iterator already did)."""
    import augjax

    batches = iterator if partial else augjax.dali.trim_epoch(iterator)
    for batch in batches:
        yield batch[0]


def to_model_inputs(batch):
    """NHWC uint8 -> normalised NCHW float32; per image, the class and the box (x1, y1, x2, y2
    divided by the side) of its largest valid object, class 0 where none is valid."""
    import torch

    images = batch["images"].permute(0, 3, 1, 2).float() / 255.0
    mean = torch.tensor(MEAN, device=images.device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=images.device).view(1, 3, 1, 1)
    images = (images - mean) / std
    boxes, valid = batch["boxes"].float(), batch["boxes_valid"].bool()
    area = (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])
    area = torch.where(valid, area, torch.full_like(area, -1.0))
    best = area.argmax(dim=1)
    rows = torch.arange(len(best), device=best.device)
    has = valid[rows, best]
    labels = torch.where(has, batch["classes"].long()[rows, best], torch.zeros_like(best))
    side = float(images.shape[-1])
    return images, labels, boxes[rows, best] / side, has


class TinyDetector:
    """A small CNN with a class head and a box head (built lazily so that importing this module
    needs no torch)."""

    def __new__(cls):
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.features = nn.Sequential(
                    nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
                    nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
                    nn.AdaptiveAvgPool2d(1), nn.Flatten())
                self.cls = nn.Linear(32, CLASSES)
                self.box = nn.Linear(32, 4)

            def forward(self, x):
                f = self.features(x)
                return self.cls(f), torch.sigmoid(self.box(f))

        return Net()


def to_device(batch, device):
    """The batch on the model's device. A GPU pipeline gives the augjax outputs (images, boxes,
    boxes_valid) as CUDA tensors but ``classes``, which only the CPU reader and ``fn.slice``
    touched, as a CPU tensor: indexing it with CUDA indices would fail."""
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def train_step(model, optimizer, batch) -> dict:
    """One optimisation step on a batch; returns the losses and the batch's sizes."""
    import torch
    from torch.nn import functional as F

    came_on = str(batch["images"].device)  # the pipeline's device: cuda:0 for a GPU pipeline
    batch = to_device(batch, next(model.parameters()).device)
    images, labels, boxes, has = to_model_inputs(batch)
    model.train()
    logits, pred = model(images)
    loss_cls = F.cross_entropy(logits, labels)
    loss_box = (F.smooth_l1_loss(pred[has], boxes[has]) if bool(has.any())
                else pred.sum() * 0.0)
    loss = loss_cls + loss_box
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return {"loss": loss.item(), "cls": loss_cls.item(), "box": loss_box.item(),
            "n": int(images.shape[0]), "valid_boxes": int(batch["boxes_valid"].sum()),
            "finite": bool(torch.isfinite(loss)), "images_device": came_on,
            "model_device": str(images.device)}


def train(root: str | Path, *, epochs: int = 2, batch_size: int = 3, size: int = 64,
          device: str = "cpu", seed: int = 0, partial: bool = False, lr: float = 1e-2):
    """Trains the tiny model; returns the per-step logs (one list per epoch)."""
    import torch

    torch.manual_seed(seed)
    model = TinyDetector()
    if device == "gpu":
        model = model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    it = make_iterator(build_pipeline(root, batch_size=batch_size, size=size, device=device,
                                      seed=seed), partial=partial)
    logs = []
    for _ in range(epochs):
        logs.append([train_step(model, optimizer, b) for b in epoch(it, partial=partial)])
    return logs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", help="dataset dir (images/, annotations.json); default: the sample "
                    "dataset in a temp dir")
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=3)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--partial", action="store_true",
                    help="LastBatchPolicy.PARTIAL instead of FILL + augjax.dali.trim_epoch")
    args = ap.parse_args(argv)
    if args.device == "gpu":
        # JAX (inside the pipeline's jax_function) and PyTorch share GPU 0: JAX takes memory as
        # it needs it instead of 75% of the GPU up front.
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        # JAX's GPU backend first, before torch loads its CUDA libraries: a JAX without CUDA
        # fails here, with its own message, not inside the pipeline's first batch.
        import jax

        jax.devices("gpu")

    tmp = None
    root = Path(args.root) if args.root else Path(tmp := tempfile.mkdtemp(prefix="augjax-pt-"))
    if not (root / "annotations.json").exists():
        make_dataset(root)
        print(f"wrote the sample dataset to {root}")
    t0 = time.perf_counter()
    logs = train(root, epochs=args.epochs, batch_size=args.batch_size, size=args.size,
                 device=args.device, seed=args.seed, partial=args.partial)
    ok = True
    for e, steps in enumerate(logs):
        sizes = [s["n"] for s in steps]
        ok &= all(s["finite"] for s in steps)
        print(f"epoch {e}: {len(steps)} steps, batch sizes {sizes} ({sum(sizes)} images), "
              f"loss {steps[0]['loss']:.3f} -> {steps[-1]['loss']:.3f}, "
              f"{sum(s['valid_boxes'] for s in steps)} valid boxes, images from "
              f"{steps[0]['images_device']}, step on {steps[0]['model_device']}")
    print(f"pytorch_train: {time.perf_counter() - t0:.1f} s, losses "
          f"{'finite' if ok else 'NOT FINITE'}")
    if tmp:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""``augjax demo`` end to end: images -> one DALI pipeline per row -> PNG grid + JSON summary."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from augjax._demo import DemoInputError
from augjax._demo.params import Row, demo_params, fmt, jsonable, parse_rows
from augjax._demo.pipeline import PipelineConfig, run_pipeline
from augjax._demo.render import GridRow, display_batch, render_grid, save_png
from augjax._demo.sources import collect, write_file_list
from augjax._plugins.registry import REGISTRY
from augjax.errors import AugjaxError

__all__ = ["DemoOptions", "DemoResult", "run_demo", "short_error"]

#: Rows run at a time (on 2 cores, warm: 1 -> 2 -> 4 workers 10.2 -> 8.9 -> 8.7 s).
_ROW_WORKERS = 4
PNG_NAME = "demo.png"
JSON_NAME = "demo.json"


@dataclasses.dataclass(frozen=True)
class DemoOptions:
    """The demo's settings (the CLI arguments)."""

    out: Path = Path("augjax-demo")
    ops: str = "*"
    device: str = "cpu"
    batch: int = 4
    seed: int = 0
    images: Path | None = None
    draws: int = 2
    size: int = 80
    progress: bool | None = None  # None: a progress bar only on a terminal
    views: str | None = "simclr"  # a recipe drawn into demo-views.png; None: none
    clip: str | None = "rotate+color_jitter"  # an op or chain drawn on clips; None: none
    frames: int = 4


@dataclasses.dataclass
class DemoResult:
    """What the demo wrote and how it went."""

    png: Path
    json: Path
    png_size: tuple[int, int]
    ok: list[str]
    failed: list[str]
    seconds: float
    summary: dict[str, Any]


def short_error(err: BaseException) -> str:
    """A one-line reason for a failure; for DALI's wrapped errors, the inner exception."""
    if isinstance(err, AugjaxError):
        return f"{type(err).__name__}: {str(err).strip().splitlines()[0]}"
    text = str(err)
    text = text[text.rfind("encountered:"):] if "encountered:" in text else text
    inner = re.findall(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception)): (.+)$", text, flags=re.M)
    if inner:
        kind, msg = inner[0]
        return f"{kind.rsplit('.', 1)[-1]}: {msg.strip()}"
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return f"{type(err).__name__}: {first}"[:400]


def _versions() -> dict[str, str]:
    import augjax

    out = {"augjax": augjax.__version__, "python": platform.python_version()}
    for name, module in (("nvidia-dali", "nvidia.dali"), ("jax", "jax"), ("jaxlib", "jaxlib"),
                         ("numpy", "numpy"), ("pillow", "PIL"), ("tqdm", "tqdm")):
        try:
            mod = __import__(module, fromlist=["__version__"])
            out[name] = str(getattr(mod, "__version__", "?"))
        except ImportError:
            out[name] = "not installed"
    return out


def _log(message: str) -> None:
    """Writes ``message`` to stderr without breaking the progress bar."""
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        print(message, file=sys.stderr)
    else:
        tqdm.write(message, file=sys.stderr)


def _progress(rows: list[Row], enabled: bool | None):
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is in the test environment
        raise DemoInputError("the demo needs Pillow and tqdm: pip install 'augjax[demo]'") from None
    disable = None if enabled is None else not enabled  # None: only on a terminal
    return tqdm(rows, desc="augjax demo", unit="op", file=sys.stderr, disable=disable,
                leave=False, dynamic_ncols=True)


def _params_text(step: Any) -> str:
    """The parameters that differ from the op's (normalised) defaults, ``k=v, ...``."""
    values = step.bound.kwargs if step.bound is not None else step.given
    shown = [f"{k}={fmt(v)}" for k, v in values.items() if not _is_default(step.spec, k, v)]
    return ", ".join(shown) if shown else "(defaults)"


def _is_default(spec: Any, name: str, value: Any) -> bool:
    p = spec.params[name]
    if p.required:
        return False
    try:
        return bool(p.check(spec.name, name, p.default) == value)
    except Exception:  # noqa: BLE001 - a default that does not normalise is shown
        return False


def _run_row(row: Row, cfg: PipelineConfig, num_classes: int) -> Any:
    t0 = time.perf_counter()
    try:
        for step in row.steps:
            step.spec = REGISTRY.get(step.name)
            step.given, step.notes = demo_params(step.spec, num_classes=num_classes,
                                                 size=cfg.size)
            step.bound = step.spec.bind(**step.given)
        return run_pipeline(cfg, [step.bound for step in row.steps])
    finally:
        row.seconds = time.perf_counter() - t0


def run_demo(opts: DemoOptions, log=None) -> DemoResult:
    """Runs the demo and writes ``opts.out/demo.png`` and ``opts.out/demo.json``.

    Raises:
        DemoInputError: bad images, an unknown op pattern, an unusable output folder.
    """
    log = log or _log
    start = time.perf_counter()
    rows = parse_rows(opts.ops)
    if opts.clip is not None:
        from augjax._demo.pipeline_structures import clip_step

        clip_step(opts.clip, opts.size)  # a bad --clip is bad input: refused before any work
    source = collect(opts.images, opts.batch)
    if opts.device == "gpu":
        _check_gpu()
    out = Path(opts.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DemoInputError(f"argument --out: cannot create the folder {str(out)!r}: {err}") from None
    with tempfile.TemporaryDirectory(prefix="augjax-demo-") as tmp:
        cfg = PipelineConfig(file_root=source.root, file_list=write_file_list(source, opts.batch, tmp),
                             batch=opts.batch, size=opts.size, device=opts.device, seed=opts.seed,
                             draws=opts.draws)
        try:
            originals = run_pipeline(dataclasses.replace(cfg, draws=1), None)
        except AugjaxError:
            raise
        except Exception as err:  # noqa: BLE001 - DALI's errors are RuntimeErrors
            raise DemoInputError(
                f"the DALI pipeline could not read the images in {str(source.root)!r}: "
                f"{short_error(err)}"
            ) from None
        base, _ = display_batch(originals.images[0], originals.layout)
        grid = [GridRow("originals", [f"{len(source.files)} images, resized and center-cropped "
                                      f"to {opts.size}x{opts.size}"],
                        [base[i] for i in range(opts.batch) for _ in range(opts.draws)])]
        records = []
        bar = _progress(rows, opts.progress)
        # rows (and the views and clips pictures) run a few at a time: a row's first batch
        # loads or compiles its programs (XLA works without the GIL) while others run; each
        # is independent (its own pipeline and seed), and rows are read back in order
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=_ROW_WORKERS)
        structures_done = pool.submit(_run_structures, opts, cfg, out, log)
        futures = [pool.submit(_run_row, row, cfg, source.num_classes) for row in rows]
        for row, future in zip(bar, futures):
            bar.set_postfix_str(row.name)
            record: dict[str, Any] = {"name": row.name, "chain": len(row.steps) > 1}
            try:
                result = future.result()
            except Exception as err:  # noqa: BLE001 - every failure is reported, none hides others
                row.error = short_error(err)
                log(f"augjax demo: {row.name} failed: {row.error}")
                lines = [ln for s in row.steps if s.bound is not None for ln in [_params_text(s)]]
                grid.append(GridRow(row.name, lines + [f"FAILED: {row.error[:160]}"],
                                    [None] * (opts.batch * opts.draws), failed=True))
                record.update(status="failed", error=row.error, detail=str(err)[:4000])
            else:
                shown = [display_batch(x, result.layout) for x in result.images]
                how = shown[0][1]
                lines = [(f"{s.name}: " if len(row.steps) > 1 else "") + _params_text(s)
                         for s in row.steps]
                plugins = sorted({d["name"] for d in map(_dist, (s.name for s in row.steps))
                                  if d and d["name"] != "augjax"})
                lines += [f"from {', '.join(plugins)}"] if plugins else []
                lab = result.labels[0]
                if lab.ndim == 2 and lab.dtype.kind == "f" and lab.shape[1] > 1:
                    lines.append(f"labels -> soft, {lab.shape[1]} classes")
                lines += [how] if how else []
                lines += [a for a in result.adapted if a.startswith("masks=")]
                cells = [shown[d][0][i] for i in range(opts.batch) for d in range(opts.draws)]
                grid.append(GridRow(row.name, lines, cells))
                record.update(
                    status="ok",
                    output={"dtype": str(result.images[0].dtype), "layout": result.layout,
                            "shape": list(result.images[0].shape),
                            "labels_shape": list(lab.shape), "display": how or "as is"},
                    adapted=result.adapted,
                    timing={"build_s": round(result.build_s, 4),
                            "first_batch_s": round(result.first_s, 4),
                            "next_batch_s": (round(statistics.median(result.next_s), 4)
                                             if result.next_s else None)},
                )
            record["steps"] = [
                {"op": s.name,
                 "distribution": _dist(s.name),
                 "params": jsonable(s.bound.kwargs) if s.bound is not None else None,
                 "demo_params": jsonable(s.given),
                 "notes": s.notes}
                for s in row.steps
            ]
            record.setdefault("timing", {})["total_s"] = round(row.seconds, 4)
            records.append(record)
        structures = structures_done.result()
        pool.shutdown()
    header = (f"augjax demo: {opts.batch} images x {opts.draws} draws, seed {opts.seed}, "
              f"DALI {opts.device}, {opts.size}x{opts.size}")
    canvas, layout = render_grid(grid, cell=opts.size, groups=opts.draws, header=header)
    png, js = out / PNG_NAME, out / JSON_NAME
    save_png(canvas, png)
    ok = [r["name"] for r in records if r["status"] == "ok"]
    failed = [r["name"] for r in records if r["status"] == "failed"]
    seconds = time.perf_counter() - start
    summary = {
        "command": "augjax demo",
        "ops_pattern": opts.ops,
        "seed": opts.seed,
        "device": opts.device,
        "batch": opts.batch,
        "draws": opts.draws,
        "size": opts.size,
        "images": {"root": str(source.root), "bundled": source.bundled,
                   "files": list(source.files), "count": len(source.files),
                   "num_classes": source.num_classes},
        "grid": {"file": PNG_NAME, "width": canvas.width, "height": canvas.height,
                 "rows": ["originals"] + [r["name"] for r in records],
                 "columns": [{"image": i, "draw": d} for i in range(opts.batch)
                             for d in range(opts.draws)],
                 "cell": layout["cell"], "column_x": layout["columns"], "row_y": layout["rows"]},
        "ops": records,
        **structures,
        "ok": ok,
        "failed": failed,
        "timing": {"originals_s": round(originals.build_s + originals.first_s, 4),
                   "total_s": round(seconds, 3)},
        "versions": _versions(),
    }
    js.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return DemoResult(png=png, json=js, png_size=(canvas.width, canvas.height), ok=ok,
                      failed=failed, seconds=seconds, summary=summary)


def _run_structures(opts: DemoOptions, cfg: PipelineConfig, out: Path,
                    log) -> dict[str, Any]:
    """The views and clips pictures (:mod:`augjax._demo.pipeline_structures`): their records
    for ``demo.json`` under ``"views"`` and ``"clips"``; a failure is recorded and logged, as
    an op's is, and takes nothing else down."""
    from augjax._demo.pipeline_structures import run_clips, run_views

    jobs = {"views": (opts.views, lambda: run_views(cfg, opts.views, out)),
            "clips": (opts.clip, lambda: run_clips(cfg, opts.clip, opts.frames, out))}
    records: dict[str, Any] = {}
    for name, (wanted, job) in jobs.items():
        if wanted is None:
            continue
        t0 = time.perf_counter()
        try:
            records[name] = job()
        except DemoInputError:
            raise
        except Exception as err:  # noqa: BLE001 - reported like a failed op
            reason = short_error(err)
            log(f"augjax demo: {name} ({wanted}) failed: {reason}")
            records[name] = {"status": "failed", "error": reason, "detail": str(err)[:4000]}
        records[name].setdefault("timing", {})["total_s"] = round(time.perf_counter() - t0, 4)
    return records


def _check_gpu() -> None:
    """Raises DemoInputError unless both JAX and DALI see a CUDA GPU."""
    import jax

    try:
        gpus = [d for d in jax.devices() if d.platform == "gpu"]
    except RuntimeError:
        gpus = []
    if not gpus:
        raise DemoInputError(
            "argument --device: 'gpu' needs JAX with CUDA and a GPU, and JAX sees none "
            "(pip install 'augjax[cuda12]', or use --device cpu)"
        )
    try:
        from nvidia.dali.backend import GetCUDADeviceCount

        count = GetCUDADeviceCount()
    except (ImportError, RuntimeError):
        count = 0
    if not count:
        raise DemoInputError(
            "argument --device: 'gpu' needs DALI for CUDA and a GPU, and DALI sees none "
            "(pip install 'augjax[cuda12]', or use --device cpu)"
        )


def _dist(name: str) -> dict[str, str] | None:
    try:
        r = REGISTRY.record(name)
    except AugjaxError:
        return None
    return {"name": r.distribution, "version": r.version}

"""MkDocs hook: the op gallery, generated from the registry while the site builds.

Every op that ``augjax.list_ops()`` lists when ``mkdocs build`` runs (augjax's own and those of
every installed pack) gets a page ``ops/<name>.md``: its picture, drawn by ``augjax show`` (the
same command a user runs, so the page shows what the user gets), its parameters from the ``Param``
declarations, its reference semantics, how masks, boxes and keypoints follow it, and its
docstring rendered as Markdown (``docstring_md.py``); ``ops/index.md`` lists them by
distribution. Each policy (``augjax.policies.FACTORIES``) gets a page too: its parameters and
defaults, reference semantics, op space with its magnitude maps, an example, and a picture drawn
by running that example on a bundled photo. Nothing is written to ``docs/``: the pages and
pictures exist only in the built site, so the gallery cannot go stale. An op or policy whose
picture cannot be drawn fails the build.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docstring_md import args_section, inline, to_markdown  # noqa: E402  (beside this file)

SECTION = "Op gallery"
#: ``augjax show`` options for the pictures: small strips, a fixed key.
SHOW_ARGS = ("--size", "96", "--seed", "0")

_MASKS = {
    "keep": "unchanged (the op does not move pixels)",
    "kernel": "through the op's own kernel with nearest sampling (ids stay exact); pixels from "
              "outside the image get `mask_fill`",
    "hook": "by the op's batch rule (mixing ops: `cutmix` pastes the partner's mask with its "
            "box, `mixup` keeps the mask of the heavier image)",
    "refuse": "refused: passing `masks=` raises `InputError`",
}
_POINTS = {
    "keep": "unchanged",
    "matrix": "moved by the op's matrix (boxes by their 4 corners to the enclosing box, "
              "clamped, flagged in `boxes_valid`; keypoints flagged once outside)",
    "hook": "by the op's batch rule",
    "refuse": "refused: passing `boxes=` or `keypoints=` raises `InputError`",
}


def _ops() -> list[str]:
    """Every registered op; ``AUGJAX_DOCS_GALLERY=a,b`` keeps a few, for a quick local build
    (the suite builds the whole gallery)."""
    import os

    import augjax

    names = augjax.list_ops()
    keep = os.environ.get("AUGJAX_DOCS_GALLERY")
    return [n for n in names if n in keep.split(",")] if keep else names


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "--", name.lower())


def _policies() -> list[str]:
    from augjax.policies import FACTORIES

    return list(FACTORIES)


def _policy_slug(name: str) -> str:
    """A policy's page: ``ops/<name>.md`` beside the ops' (an op of the same name would take
    that path: the policy's then is ``ops/policy-<name>.md``)."""
    return f"policy-{name}" if name in _ops() else _slug(name)


def on_config(config: Any) -> Any:
    """Puts the policies, then one nav entry per op, under the gallery section."""
    policies = [{name: f"ops/{_policy_slug(name)}.md"} for name in _policies()]
    pages = [{"Policies": policies}] + [{name: f"ops/{_slug(name)}.md"} for name in _ops()]
    for i, entry in enumerate(config["nav"]):
        if isinstance(entry, dict) and SECTION in entry:
            index = entry[SECTION]
            config["nav"][i] = {SECTION: [index] + pages if isinstance(index, str) else index}
    return config


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _params_table(params: dict[str, dict[str, Any]]) -> str:
    if not params:
        return "No parameters.\n"
    rows = ["| parameter | kind | default | accepted values | magnitude (policies) | meaning |",
            "|---|---|---|---|---|---|"]
    for name, p in params.items():
        default = "required" if p["required"] else f"`{p['default']!r}`"
        magnitude = p["magnitude"]
        if magnitude is not None and not isinstance(magnitude, tuple):
            magnitude = f"{magnitude.value(0, 1, False, 1, 1):g} to " \
                        f"{magnitude.value(1, 1, False, 1, 1):g}"
        elif magnitude is not None:
            magnitude = f"{magnitude[0]:g} to {magnitude[1]:g}"
        if magnitude is not None and p["signed"]:
            magnitude += " (sign drawn)"
        aliases = ", ".join(f"{a} ({lib})" for a, lib in p["aliases"].items())
        meaning = inline(p["doc"]) + (f" Other names: {aliases}." if aliases else "")
        rows.append(f"| `{name}` | {p['kind']} | {_cell(default)} | {_cell(p['range'])} | "
                    f"{_cell(magnitude or '')} | {_cell(meaning)} |")
    return "\n".join(rows) + "\n"


def _draw(name: str, out: Path) -> str:
    """Runs ``augjax show`` in this process; returns what it printed (the sweep it drew)."""
    from augjax.cli.main import main

    printed, errors = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(errors):
        code = main(["show", name, "--out", str(out), *SHOW_ARGS])
    if code != 0:
        raise RuntimeError(f"op gallery: `augjax show {name}` failed: {errors.getvalue()}")
    return printed.getvalue().strip()


def op_page(info: dict[str, Any], picture: str, drawn: str) -> str:
    """The Markdown of one op's page, from ``augjax.cli.info.describe`` and the picture."""
    name = info["name"]
    how = re.sub(r"; wrote .*$", "", drawn.removeprefix("augjax show: "))
    random = "random (a call needs a key, or seeds in DALI)" if info["random"] else "deterministic"
    layouts = ", ".join(info["layouts"])
    lines = [
        f"# {name}",
        "",
        inline(info["summary"] or ""),
        "",
        f"`{info['distribution']}=={info['version']}` · level `{info['level']}` · {random} · "
        f"dtypes {', '.join(info['dtypes'])} · layouts {layouts}"
        + (" · changes the image size" if info["changes_size"] else ""),
        "",
        f"![{name}: augjax show]({picture})",
        "",
        f"*`augjax show {name}`: the original, then {how}.*",
        "",
        "## Parameters",
        "",
        _params_table(info["params"]),
        "## Reference semantics",
        "",
        info["reference"] or "Not declared.",
        "",
        "## Masks, boxes and keypoints",
        "",
        f"- masks: {_MASKS[info['targets']['masks']]}",
        f"- boxes and keypoints: {_POINTS[info['targets']['points']]}",
        "",
    ]
    if info["doc"]:
        lines += ["## Details", "", to_markdown(info["doc"]), ""]
    lines += [f"Shown by `augjax info {name}` from the command line.", ""]
    return "\n".join(lines)


#: Each policy's example: the configuration shown (the reference's usual setting) and what it
#: matches. The page prints it; the picture is drawn by running it.
EXAMPLES = {
    "rand_augment": ("n=2, m=9", "torchvision's RandAugment(num_ops=2, magnitude=9)"),
    "trivial_augment_wide": ("", "torchvision's TrivialAugmentWide()"),
    "auto_augment": ('policy="imagenet"', "torchvision's AutoAugment(IMAGENET)"),
    "augmix": ("severity=3, width=3", "torchvision's AugMix(severity=3, mixture_width=3)"),
}
#: Policies whose module docstring is their reference semantics (``rand_augment``'s module
#: also holds ``trivial_augment_wide``, whose own docstring says its reference).
_MODULE_REFERENCE = ("rand_augment", "auto_augment", "augmix")
#: Draws of the one photo shown on a policy's page (one batch, each sample its own key).
POLICY_DRAWS = 5


def _example(name: str, size: int, count: int | None) -> str:
    """The example program of policy ``name`` on ``count`` bundled photos of ``size`` pixels
    (``count=None``: all 8)."""
    config, like = EXAMPLES.get(name, ("", name))
    images = f"augjax.data.sample_images({size}" + (f", count={count})" if count else ")")
    return (f"import jax\n"
            f"import augjax\n"
            f"import augjax.data\n\n"
            f"policy = augjax.{name}({config})   # {like}\n"
            f"images = {images}\n"
            f"out = policy(images, key=jax.random.key(0))   # each sample its own draw\n"
            f"print(out.shape, out.dtype)\n")


def _policy(name: str, out: Path) -> tuple[dict[str, Any], str, str]:
    """Describes policy ``name`` (``augjax info``'s record), runs its example on one photo
    repeated ``POLICY_DRAWS`` times and draws the strip to ``out``; returns the record, the
    example shown and the picture's caption."""
    import numpy as np

    import augjax.data
    from augjax._demo.render import render_strip, save_png
    from augjax.policies import describe_policy

    info = describe_policy(name)
    side = int(SHOW_ARGS[SHOW_ARGS.index("--size") + 1])
    photo = augjax.data.sample_images(side, count=1)
    program = _example(name, side, 1).replace(
        "images = ", "images = np.repeat(", 1).replace(
        "count=1)\n", f"count=1), {POLICY_DRAWS}, axis=0)\n", 1)
    scope: dict[str, Any] = {"np": np}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(program, f"<{name} example>", "exec"), scope)  # the page's example
    cells = [np.asarray(photo[0])] + list(np.asarray(scope["out"]))
    labels = ["original"] + [f"sample {i}" for i in range(POLICY_DRAWS)]
    config = EXAMPLES.get(name, ("",))[0]
    strip, _ = render_strip(cells, labels, cell=side,
                            header=f"augjax.{name}({config}), key 0: {POLICY_DRAWS} samples")
    save_png(strip, out)
    caption = (f"*`augjax.{name}({config})` on one photo repeated {POLICY_DRAWS} times "
               f"(key 0): each sample draws its own ops and magnitudes.*")
    return info, _example(name, 224, None), caption


def _policy_params(info: dict[str, Any]) -> str:
    from augjax.policies import FACTORIES

    cls = FACTORIES[info["name"]].policy
    docs = args_section(inspect.getdoc(cls) or "")
    declared = cls.config_params()
    resolved = info["config"]
    rows = ["| parameter | default | as resolved | other names | meaning |",
            "|---|---|---|---|---|"]
    for name, default in info["defaults"].items():
        aliases = ", ".join(f"`{a}` ({lib})" for a, lib in dict(declared[name].aliases).items())
        value = resolved.get(name, default)
        shown = "" if value == default else f"`{value!r}`"
        rows.append(f"| `{name}` | `{default!r}` | {_cell(shown)} | {_cell(aliases)} | "
                    f"{_cell(inline(docs.get(name, '')))} |")
    return "\n".join(rows) + "\n"


def _policy_space(info: dict[str, Any]) -> str:
    rows = ["| entry | augjax op | parameter | value at level `t` | at level 0 | at the top |",
            "|---|---|---|---|---|---|"]
    for e in info["ops"]:
        fixed = ", ".join(f"{k}={v!r}" for k, v in e["fixed"].items())
        op = (f"`{e['op']}`" + (f" ({fixed})" if fixed else "")) if e["op"] else "identity"
        param = f"`{e['param']}`" if e["param"] else ""
        m = e["magnitude"]
        values = (f"`{m['formula']}` | {m['at_level_0']:.4g} | {m['at_max_level']:.4g}"
                  if m else " | | ")
        rows.append(f"| {e['name']} | {_cell(op)} | {param} | {values} |")
    return "\n".join(rows) + "\n"


def _plain_signature(factory: Any) -> str:
    """``(n=2, m=9, ..., *, mstd=0.0, ...)``: the factory's parameters and defaults."""
    sig = inspect.signature(factory)
    plain = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=plain, return_annotation=inspect.Signature.empty))


def policy_page(info: dict[str, Any], picture: str, example: str, caption: str) -> str:
    """The Markdown of one policy's page, from ``augjax.policies.describe_policy``."""
    from augjax.policies import FACTORIES

    name = info["name"]
    factory = FACTORIES[name]
    variant = info["variant"]
    if name in _MODULE_REFERENCE:
        reference = to_markdown(inspect.getmodule(factory.policy).__doc__ or "")
    else:
        intro = (inspect.getdoc(factory.policy) or "").split("\nArgs:")[0]
        reference = to_markdown(intro)
    lines = [
        f"# {name}",
        "",
        inline(info["summary"]),
        "",
        f"`augjax.{name}` · policy: one composite step, each sample's ops drawn inside one "
        f"compiled program · `{variant['option']}`: "
        + ", ".join(f"`{c!r}`" for c in variant["choices"]),
        "",
        f"![{name}: its example on a bundled photo]({picture})",
        "",
        caption,
        "",
        "## Parameters",
        "",
        "```python",
        f"augjax.{name}{_plain_signature(factory)}",
        "```",
        "",
        _policy_params(info),
        "*as resolved*: the value the default configuration resolves a default to (per "
        f"`{variant['option']}`).",
        "",
        "## Reference semantics",
        "",
        reference,
        "## Op space",
        "",
        f"The default configuration's entries; `t` is the level as a fraction of the top "
        f"({info['scale']['text']}). Values for a {info['image_side']} x {info['image_side']} "
        f"image where a map depends on the side; `±`: negated with probability 1/2. Other "
        f"configurations: `augjax info {name} {variant['option']}=...`.",
        "",
        _policy_space(info),
        "## Example",
        "",
        "```python",
        example.rstrip(),
        "```",
        "",
        f"In a chain, `augjax.compose(..., augjax.{name}(...), ...)`; in a DALI pipeline, "
        f"`augjax.{name}(images, ...)` inside the `@pipeline_def` ([the API reference]"
        f"(../reference/api.md#augjax.policies.{name}) has the call forms).",
        "",
        f"Shown by `augjax info {name}` from the command line.",
        "",
    ]
    return "\n".join(lines)


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    from augjax.cli.info import describe

    by_dist: dict[str, list[tuple[str, str]]] = {}
    with tempfile.TemporaryDirectory(prefix="augjax-gallery-") as tmp:
        for name in _ops():
            slug = _slug(name)
            info = describe(name)
            drawn = _draw(name, Path(tmp) / f"{slug}.png")
            picture = (Path(tmp) / f"{slug}.png").read_bytes()
            files.append(File.generated(config, f"ops/{slug}.png", content=picture))
            files.append(File.generated(config, f"ops/{slug}.md",
                                        content=op_page(info, f"{slug}.png", drawn)))
            by_dist.setdefault(info["distribution"], []).append((name, info["summary"] or ""))
        policies = []
        for name in _policies():
            slug = _policy_slug(name)
            info, example, caption = _policy(name, Path(tmp) / f"{slug}.png")
            files.append(File.generated(config, f"ops/{slug}.png",
                                        content=(Path(tmp) / f"{slug}.png").read_bytes()))
            files.append(File.generated(config, f"ops/{slug}.md", content=policy_page(
                info, f"{slug}.png", example, caption)))
            policies.append((name, slug, info["summary"]))
    index = ["# Op gallery", "",
             f"Every op registered when this site was built: {sum(map(len, by_dist.values()))} "
             f"ops from {len(by_dist)} distributions, and augjax's {len(policies)} policies. "
             "Each page is generated from the op's declaration (the policy's configuration); "
             "its picture is drawn by `augjax show` (the policy's example) on a bundled photo.",
             "", "## Policies", "", "| policy | what it does |", "|---|---|"]
    index += [f"| [`{n}`]({slug}.md) | {_cell(inline(s))} |" for n, slug, s in policies]
    index.append("")
    for dist, ops in sorted(by_dist.items()):
        index += [f"## {dist}", "", "| op | what it does |", "|---|---|"]
        index += [f"| [`{n}`]({_slug(n)}.md) | {_cell(inline(s))} |" for n, s in ops]
        index.append("")
    files.append(File.generated(config, "ops/index.md", content="\n".join(index)))
    return files

"""MkDocs hook: the op gallery, generated from the registry while the site builds.

Every op that ``augjax.list_ops()`` lists when ``mkdocs build`` runs (augjax's own and those of
every installed pack) gets a page ``ops/<name>.md``: its picture, drawn by ``augjax show`` (the
same command a user runs, so the page shows what the user gets), its parameters from the ``Param``
declarations, its reference semantics, how masks, boxes and keypoints follow it, and its
docstring; ``ops/index.md`` lists them by distribution. Nothing is written to ``docs/``: the pages
and pictures exist only in the built site, so the gallery cannot go stale. An op whose picture
cannot be drawn fails the build.
"""

from __future__ import annotations

import contextlib
import io
import re
import tempfile
from pathlib import Path
from typing import Any

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


def on_config(config: Any) -> Any:
    """Puts one nav entry per op under the gallery section."""
    pages = [{name: f"ops/{_slug(name)}.md"} for name in _ops()]
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
        meaning = p["doc"] + (f" Other names: {aliases}." if aliases else "")
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
        info["summary"] or "",
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
        lines += ["## Details", "", "```text", info["doc"].strip(), "```", ""]
    lines += [f"Shown by `augjax info {name}` from the command line.", ""]
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
    index = ["# Op gallery", "",
             f"Every op registered when this site was built: {sum(map(len, by_dist.values()))} "
             f"ops from {len(by_dist)} distributions. Each page is generated from the op's "
             "declaration; its picture is drawn by `augjax show` on a bundled photo.", ""]
    for dist, ops in sorted(by_dist.items()):
        index += [f"## {dist}", "", "| op | what it does |", "|---|---|"]
        index += [f"| [`{n}`]({_slug(n)}.md) | {_cell(s)} |" for n, s in ops]
        index.append("")
    files.append(File.generated(config, "ops/index.md", content="\n".join(index)))
    return files

"""The measured figures of README.md and docs/: tables and numbers written from result files.

A page never holds a measured number by hand. It holds a marker naming a result file under
``benchmarks/results/``, and ``python benchmarks/report.py`` writes the figure after it from that
file, with the file's date and machine (``--check`` fails while a page differs from what the
files give; ``tests/docs/test_figures.py`` runs that check). Two forms:

A block, between an opening marker and ``<!-- figure: end -->`` (everything between them is
rewritten)::

    <!-- figure: grain-cpu-2026-12-04.json table rows=median_images_per_s header="loader|img/s" -->
    <!-- figure: end -->

An inline number: the number right before the marker is rewritten (the unit stays outside)::

    augjax's chain ran at 1.09<!-- value: e2e-gpu-h200-2026-12-01.json
    "summary/B=256 dynamic/augjax_chain_vs_decode_crop" .2f -->x the speed of decode + crop.

(one line in a page; split here to fit).

A block's arguments (after the file name, ``shlex`` syntax; a list is ``|``-separated):

- ``source``: only the line naming the file, its date, machine and versions (for a paragraph of
  inline numbers from that file).
- ``table``: a table from the JSON value at ``rows=PATH`` (keys joined by ``/``; with several
  files, a column per file of the same dict of numbers): a list of dicts (a row per dict, named
  by its first column; ``columns=`` picks and orders the keys, ``a/b`` a nested one,
  ``where=KEY:VALUE`` filters), a
  dict of dicts (a row per key; ``columns=`` the inner keys), or a dict of numbers (a row per
  key, one value column). ``pick=`` picks and orders the rows, ``pick_columns=`` the columns
  (after ``transpose=1``, which swaps rows and columns); ``cell=KEY`` reads each cell one level
  deeper (``{"img_s": ...}``; ``cell=a|b`` shows two keys as "a / b"); ``ratio_to=ROW`` adds
  each cell's ratio to that row of its column ("(0.89x)"); ``header=`` names the columns;
  ``fmt=`` formats numbers (a Python format spec, ``,.0f`` or ``.3f``; ``1000*.0f`` multiplies
  first, seconds to ms; by default thousands are separated from 1,000 up, smaller numbers get
  3 significant digits); ``suffix=`` follows every number (``" ms"``).

A text result file (``.txt``, ``.log``) gives inline numbers and ``source`` lines: its PATH is a
regular expression (in single quotes) whose first group is the number; its date is the one in
its name (or text), its machine a ``machine:`` line, else its name's, else its first line.

Adding a figure is: the result file under ``benchmarks/results/`` (with ``date``, ``machine`` and
``versions``, or ``meta`` holding them; a file name ``<kind>-<machine>-<date>...`` supplies what the
file lacks), the marker in the page, ``python benchmarks/report.py``. CONTRIBUTING.md says so.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
END = "<!-- figure: end -->"
_BLOCK = re.compile(r"^([ \t]*)<!-- figure: (?!end)(.+?) -->[ \t]*\n"
                    r"(.*?)^[ \t]*<!-- figure: end -->", re.MULTILINE | re.DOTALL)
_VALUE = re.compile(r"(-?[0-9][0-9,]*(?:\.[0-9]+)?%?|—)<!-- value: (.+?) -->")
_MACHINE = re.compile(r"-(cpu|gpu-[a-z0-9]+|gpu|h200x\d+)-")
_FILE = re.compile(r"\.(json|txt|log)$")
_DATE = re.compile(r"(20\d\d-\d\d-\d\d)")


class FigureError(ValueError):
    """A marker that names a missing file, path or option."""


def pages() -> list[Path]:
    """The pages whose figures are written: README.md and docs/ (not its hooks)."""
    found = [ROOT / "README.md"]
    found += sorted(p for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.parts)
    return [p for p in found if p.exists()]


def load(name: str) -> dict:
    """A JSON result file, or a text one (``.txt``, ``.log``) as ``{"text": ...}``."""
    path = RESULTS / name
    if not path.is_file():
        raise FigureError(f"no result file benchmarks/results/{name}")
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else {"text": text}


def _is_file(word: str) -> bool:
    return bool(_FILE.search(word))


def _number(text: str):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return text


def lookup(data, path: str, name: str = ""):
    """The value at ``path`` (keys joined by ``/``; a key holding ``/`` is found whole; a list
    index is a number)."""
    if set(data) == {"text"}:  # a text result file: PATH is a regular expression, its group 1
        found = re.search(path, data["text"], re.MULTILINE)
        if not found:
            raise FigureError(f"{name}: nothing matches {path!r}")
        return _number(found.group(1))
    value, parts = data, path.split("/") if path else []
    while parts:
        for n in range(len(parts), 0, -1):  # the longest key first: "NumPy/PIL (grain)"
            key = "/".join(parts[:n])
            if isinstance(value, dict) and key in value:
                value, parts = value[key], parts[n:]
                break
            if n == 1 and isinstance(value, list) and key.isdigit() and int(key) < len(value):
                value, parts = value[int(key)], parts[1:]
                break
        else:
            raise FigureError(f"{name}: no {parts[0]!r} at {path!r}")
    return value


def fmt(value, spec: str | None = None, suffix: str = "") -> str:
    """A number as a page shows it; None (a row not run) as a dash."""
    if value is None:
        return "—"
    if isinstance(value, tuple):  # several keys of one cell: "a / b"
        return " / ".join(fmt(v, spec, suffix) for v in value)
    scaled = re.match(r"^(\d+(?:\.\d+)?)\*(.*)$", spec or "")
    if scaled and isinstance(value, (int, float)) and not isinstance(value, bool):
        value, spec = value * float(scaled.group(1)), scaled.group(2) or None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if spec:
        text = format(value, spec)
    elif isinstance(value, int) or abs(value) >= 1000:
        text = f"{value:,.0f}"
    else:
        text = f"{value:.3g}" if abs(value) >= 1e-3 else f"{value:.2g}"
    return text + suffix


# -- where and when -------------------------------------------------------------------------


def _first(data: dict, *keys):
    for k in keys:
        for scope in (data, data.get("meta") if isinstance(data.get("meta"), dict) else {}):
            if isinstance(scope, dict) and scope.get(k) not in (None, "", {}):
                return scope[k]
    return None


def provenance(name: str, data: dict) -> tuple[str, str, str]:
    """(date, machine, versions) of a result file: its fields, else its name's."""
    if set(data) == {"text"}:  # a text file: the date in its name or text, its machine line
        text = data["text"]
        found = _DATE.search(name) or _DATE.search(text)
        line = re.search(r"^#? ?machine: (.+)$", text, re.MULTILINE)
        token = _MACHINE.search(name)
        first = text.strip().splitlines()[0].lstrip("# ").rstrip(" ,") if text.strip() else ""
        machine = (line.group(1) if line else token.group(1) if token
                   else f"the machine its first line names ({first})" if first else None)
        if not found or not machine:
            raise FigureError(f"{name}: the result file names no date or machine")
        return found.group(1), machine.strip(), ""
    date = _first(data, "date")
    date = str(date)[:10] if date else (_DATE.search(name).group(1) if _DATE.search(name) else None)
    machine = _first(data, "machine")
    host = _first(data, "host")
    gpu = (_first(data, "versions") or {}).get("gpu") if isinstance(
        _first(data, "versions"), dict) else None
    if isinstance(machine, dict):
        cores, load = machine.get("cpu_count"), machine.get("load_average_1min")
        if gpu:  # a GPU run: the GPU, then the host
            machine = f"{gpu}, {cores} host cores" if cores else str(gpu)
        else:
            machine = f"a {cores}-core CPU machine" if cores else machine.get("processor")
        if load is not None:
            machine += f", 1-minute load {load:.1f} at the start"
    if not machine and _first(data, "cpu_count"):
        found = _MACHINE.search(name)
        cores = _first(data, "cpu_count")
        gpu_run = found and found.group(1).startswith("gpu")
        machine = (f"{found.group(1)}, {cores} host cores" if gpu_run
                   else f"a {cores}-core CPU machine")
    if not machine:  # the file name's machine: <kind>-<machine>-<date>
        found = _MACHINE.search(name)
        machine = found.group(1) if found else None
    if isinstance(host, dict) and host.get("cpu_count"):
        machine = f"{machine}, {host['cpu_count']} host cores"
    if not date or not machine:
        raise FigureError(f"{name}: the result file names no date or machine")
    versions = _first(data, "versions") or {}
    if not versions and isinstance(data.get("jax"), str):
        versions = {"jax": data["jax"], "augjax": data.get("augjax")}
    shown = [f"{label} {versions[k]}" for k, label in
             (("augjax", "augjax"), ("jax", "JAX"), ("dali", "DALI"), ("torch", "torch"),
              ("grain", "grain"), ("python", "Python")) if versions.get(k)]
    return date, str(machine), ", ".join(shown)


def source_line(names: list[str]) -> str:
    groups: dict[tuple, list[str]] = {}
    for name in names:
        groups.setdefault(provenance(name, load(name)), []).append(f"`benchmarks/results/{name}`")
    parts = [f"measured {date} on {machine}" + (f" ({versions})" if versions else "")
             + ": " + ", ".join(files) for (date, machine, versions), files in groups.items()]
    text = "; ".join(parts)
    return f"*{text[0].upper()}{text[1:]}.*"


# -- tables ---------------------------------------------------------------------------------


class _Row(str):
    """A row's name, told apart from rows of the same name by its place."""

    def __new__(cls, name: str, index: int):
        row = super().__new__(cls, name)
        row.index = index
        return row

    def __hash__(self):
        return hash((str(self), self.index))

    def __eq__(self, other):
        return str(self) == str(other) and getattr(other, "index", None) == self.index


def _split(text: str | None) -> list[str] | None:
    return None if text is None else [t.strip() for t in text.split("|")]


def _cells(data, opts: dict, name: str) -> tuple[list[str], list[str], dict]:
    """(row labels, column labels, {(row, column): value}) of ``rows=``."""
    target = lookup(data, opts.get("rows", ""), name)
    cells: dict = {}
    if isinstance(target, list):
        if not all(isinstance(r, dict) for r in target):
            raise FigureError(f"{name}: rows={opts.get('rows')!r} is a list of non-dicts")
        if "where" in opts:
            key, _, want = opts["where"].partition(":")
            target = [r for r in target if str(r.get(key)) == want]
        keys = _split(opts.get("columns") or None) or [k for k in target[0]
                                                if not isinstance(target[0][k], (list, dict))]
        label, keys = keys[0], keys[1:]
        rows = []
        for i, r in enumerate(target):  # a row's name is its first column; rows may share it
            rows.append(_Row(str(r.get(label)), i))
            for k in keys:  # a key "a/b" reads r["a"]["b"]
                v = r
                for part in k.split("/"):
                    v = v.get(part) if isinstance(v, dict) else None
                cells[(rows[-1], k)] = v
        return rows, keys, cells
    if not isinstance(target, dict):
        raise FigureError(f"{name}: rows={opts.get('rows')!r} is neither a list nor a dict")
    if opts.get("transpose") != "1" and _split(opts.get("pick")):
        target = {k: v for k, v in target.items() if k in _split(opts["pick"])}
    rows = list(target)
    if any(isinstance(v, dict) for v in target.values()):
        cols: list[str] = []
        for v in target.values():
            cols += [k for k in (v if isinstance(v, dict) else {}) if k not in cols]
        cols = _split(opts.get("columns") or None) or cols
        for r in rows:
            for c in cols:
                v = target[r].get(c) if isinstance(target[r], dict) else None
                if "cell" in opts and isinstance(v, dict):
                    keys = _split(opts["cell"])
                    v = tuple(v.get(k) for k in keys) if len(keys) > 1 else v.get(keys[0])
                cells[(r, c)] = v
        return rows, cols, cells
    for r in rows:
        cells[(r, "value")] = target[r]
    return rows, ["value"], cells


def table(names: list[str], opts: dict) -> list[str]:
    if len(names) > 1:  # a column per file: the same dict of numbers in each
        rows, cols, cells = [], [], {}
        for name in names:
            r, c, v = _cells(load(name), {**opts, "columns": None}, name)
            if c != ["value"]:
                raise FigureError(f"{name}: several files make a column each of a dict of numbers")
            rows += [x for x in r if x not in rows]
            cols.append(name)
            cells.update({(x, name): v[(x, "value")] for x in r})
    else:
        rows, cols, cells = _cells(load(names[0]), opts, names[0])
    if opts.get("transpose") == "1":
        rows, cols = cols, rows
        cells = {(c, r): v for (r, c), v in cells.items()}
    picked = _split(opts.get("pick"))
    if picked:
        missing = [p for p in picked if p not in map(str, rows)]
        if missing:
            raise FigureError(f"{names[0]}: pick= names rows it does not have: {missing}")
        rows = [r for p in picked for r in rows if str(r) == p]
    if "pick_columns" in opts:
        cols = _split(opts["pick_columns"])
    spec, suffix, base = opts.get("fmt"), opts.get("suffix", ""), opts.get("ratio_to")

    def cell(r, c):
        v = cells.get((r, c))
        text = fmt(v, spec, suffix)
        b = cells.get((base, c)) if base else None
        if base and r != base and isinstance(v, (int, float)) and isinstance(b, (int, float)) and b:
            text += f" ({v / b:.2f}x)"
        return text

    header = _split(opts.get("header")) or ["", *cols]
    if len(header) != len(cols) + 1:
        raise FigureError(f"{names[0]}: header= has {len(header)} names for {len(cols) + 1} "
                          "columns")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join([r, *(cell(r, c) for c in cols)]) + " |" for r in rows]
    return lines


def render(marker: str) -> str:
    """The text a block marker stands for (without the markers)."""
    words = shlex.split(marker)
    names = [w for w in words if _is_file(w)]
    rest = [w for w in words if not _is_file(w)]
    if not names or not rest:
        raise FigureError(f"figure marker {marker!r}: expected FILE... KIND [key=value...]")
    kind, opts = rest[0], dict(w.split("=", 1) for w in rest[1:])
    lines = [source_line(names)]
    if kind == "table":
        lines += [""] + table(names, opts)
    elif kind != "source":
        raise FigureError(f"figure marker {marker!r}: unknown kind {kind!r} (table, source)")
    return "\n".join(lines)


def value(marker: str) -> str:
    """The number an inline marker stands for."""
    words = shlex.split(marker)
    if len(words) < 2:
        raise FigureError(f"value marker {marker!r}: expected FILE PATH [FORMAT]")
    name, path = words[0], words[1]
    v = lookup(load(name), path, name)
    return fmt(v, words[2] if len(words) > 2 else None)


def rewrite(text: str) -> str:
    """The page with every figure and inline number written from its result file."""

    def block(m):  # indented as its marker (a figure inside a list item)
        lines = render(m.group(2)).split("\n")
        body = "\n".join(m.group(1) + line if line else "" for line in lines)
        return f"{m.group(1)}<!-- figure: {m.group(2)} -->\n{body}\n\n{m.group(1)}{END}"

    text = _BLOCK.sub(block, text)
    return _VALUE.sub(lambda m: f"{value(m.group(2))}<!-- value: {m.group(2)} -->", text)


def update(check: bool = False, paths: list[Path] | None = None) -> list[Path]:
    """Rewrites (or with ``check`` only lists) the pages whose figures are not up to date."""
    stale = []
    for path in paths or pages():
        old = path.read_text(encoding="utf-8")
        new = rewrite(old)
        if new != old:
            stale.append(path)
            if not check:
                path.write_text(new, encoding="utf-8")
    return stale


def referenced(paths: list[Path] | None = None) -> dict[str, list[str]]:
    """Result files each page's markers name."""
    out = {}
    for path in paths or pages():
        text = path.read_text(encoding="utf-8")
        names = [n for m in _BLOCK.finditer(text) for n in shlex.split(m.group(2)) if _is_file(n)]
        names += [shlex.split(m.group(2))[0] for m in _VALUE.finditer(text)]
        if names:
            out[str(path.relative_to(ROOT))] = sorted(set(names))
    return out

"""How long an op's declaration is: the lines an author writes for each ``@op`` of the catalog.

For every function decorated with ``@op(...)`` in ``augjax/catalog/*.py`` (and, with
``--contrib``, ``augjax_contrib/src``), the count is the *code* lines (no docstring, blank or
comment lines) of its decorators and its kernel, plus those of each module-level function the
decorators name (its ``sample=``, ``matrix=``, ``output_size=``, ``check=`` hooks, the geometry
its kernel wraps, a catalog family member): what someone reads to know what the op does and
where its geometry comes from. Helpers the kernel body calls are library code and not counted.

``python benchmarks/declaration_lines.py [--contrib] [--all]`` prints the number of ops and the
median (``--all``: each op's count). ``tests/core/test_declaration_size.py`` asserts the median.
"""

from __future__ import annotations

import argparse
import ast
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _code_lines(lines: list[str], node: ast.AST) -> int:
    body = getattr(node, "body", [])
    doc: set[int] = set()
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        doc = set(range(body[0].lineno, body[0].end_lineno + 1))
    start = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
    return sum(1 for i in range(start, node.end_lineno + 1)
               if i not in doc and lines[i - 1].strip() and not lines[i - 1].strip().startswith("#"))


def _is_op(decorator: ast.expr) -> bool:
    if not isinstance(decorator, ast.Call):
        return False
    f = decorator.func
    return (f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)) == "op"


def declaration_lines(files: list[Path]) -> dict[str, int]:
    """``{op function name: lines}`` for every ``@op`` declaration in ``files``."""
    out: dict[str, int] = {}
    for path in files:
        text = path.read_text()
        lines = text.splitlines()
        tree = ast.parse(text)
        funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef) or not any(map(_is_op, node.decorator_list)):
                continue
            named = {x.id for d in node.decorator_list for x in ast.walk(d)
                     if isinstance(x, ast.Name) and x.id in funcs and x.id != node.name}
            out[f"{path.stem}.{node.name}"] = _code_lines(lines, node) + sum(
                _code_lines(lines, funcs[k]) for k in sorted(named))
    return out


def catalog_files(contrib: bool = False) -> list[Path]:
    files = sorted((ROOT / "augjax" / "catalog").glob("*.py"))
    if contrib:
        files += sorted((ROOT / "augjax_contrib" / "src").rglob("*.py"))
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contrib", action="store_true", help="also augjax_contrib's ops")
    parser.add_argument("--all", action="store_true", help="print each op's count")
    args = parser.parse_args()
    counts = declaration_lines(catalog_files(args.contrib))
    if args.all:
        for name, n in sorted(counts.items(), key=lambda kv: kv[1]):
            print(f"{n:4d}  {name}")
    print(f"{len(counts)} ops, median {statistics.median(counts.values())} lines")


if __name__ == "__main__":
    main()

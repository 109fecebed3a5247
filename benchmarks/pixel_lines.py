"""How many lines the policies, the Pallas forms and the fused ColorJitter take.

The set: ``augjax/policies/*.py``; the Pallas forms ``augjax/kernels/*pallas*.py`` and
``augjax/kernels/pallas.py`` (what they share: tiles, loads, rounding); ``augjax/catalog/_fuse.py``
(the policy family members) and ``augjax/catalog/_jitter_kernel.py`` (ColorJitter's Pallas form).
Lines as ``wc -l`` counts them (every line, docstrings and comments included).

``python benchmarks/pixel_lines.py`` prints each file's count and the total; the issue's
bound is 70% of 4,404 (3,083 lines).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOUND = 3083


def pixel_files() -> list[Path]:
    """The files of the set, sorted."""
    a = ROOT / "augjax"
    files = set((a / "policies").glob("*.py")) | set((a / "kernels").glob("*pallas*.py"))
    files |= {a / "catalog" / "_fuse.py", a / "catalog" / "_jitter_kernel.py"}
    return sorted(files)


def main() -> None:
    total = 0
    for path in pixel_files():
        n = len(path.read_text().splitlines())
        total += n
        print(f"{n:6d}  {path.relative_to(ROOT)}")
    print(f"{total:6d}  total (bound {BOUND})")


if __name__ == "__main__":
    main()

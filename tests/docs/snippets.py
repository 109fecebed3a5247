"""The code blocks of README.md, CONTRIBUTING.md and docs/: found, grouped and classified.

A reader copies a block and runs it; so does the suite (``test_snippets.py``). The rules a page
follows (an HTML comment on the line right before a fence marks a block; nothing else does):

- A ```python block is a whole program: it runs alone, as printed, in a fresh Python whose
  working directory is an empty temporary folder.
- ``<!-- snippet: continues -->`` before a ```python block: it continues the page's previous
  ```python block (they run together, in page order, as one program).
- A ```python block whose first line is ``# file: PATH`` is a file of an example project: it is
  written to ``PATH`` in the temporary folder of the page's later blocks, and compiled.
- ``<!-- snippet: gpu -->``: the block needs a CUDA GPU (run on the GPU machine, ``pytest -m
  gpu``; skipped elsewhere, with the reason).
- A ```bash block whose every command is ``augjax ...`` or ``python examples/NAME.py ...`` runs,
  line by line, in a temporary folder. Any other ```bash block names why the suite does not run it:
  ``<!-- snippet: install -->`` (it installs, or runs the test suite: CI runs README's test
  command itself), ``<!-- snippet: cluster -->`` (several hosts) or ``<!-- snippet: gpu -->``.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKS = {"continues", "gpu", "install", "cluster"}
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_MARK = re.compile(r"<!--\s*snippet:\s*([\w-]+)\s*-->\s*$")


@dataclasses.dataclass
class Block:
    """One fenced block: its page, 1-based line, language, text and mark."""

    page: str
    line: int
    lang: str
    code: str
    mark: str | None

    @property
    def file(self) -> str | None:
        """``PATH`` of a ``# file: PATH`` block, else None."""
        first = self.code.split("\n", 1)[0]
        return first[len("# file:"):].strip() if first.startswith("# file:") else None

    @property
    def ident(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """The Markdown files a reader reads: README.md, CONTRIBUTING.md and docs/ (not its hooks)."""
    found = [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    found += sorted(p for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.parts)
    return [p for p in found if p.exists()]


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = _MARK.search(before)
        name = mark.group(1) if mark else None
        if name is not None and name not in MARKS:
            raise ValueError(f"{path.name}: unknown snippet mark {name!r} (one of {sorted(MARKS)})")
        out.append(Block(str(path.relative_to(ROOT)), text[:m.start()].count("\n") + 1,
                         m.group(1), m.group(2), name))
    return out


@dataclasses.dataclass
class Program:
    """What one test runs: the page's files written first, then one or more blocks' code."""

    first: Block
    parts: list[Block]
    files: list[Block]

    @property
    def code(self) -> str:
        return "\n".join(b.code for b in self.parts)

    @property
    def gpu(self) -> bool:
        return any(b.mark == "gpu" for b in self.parts)


def python_programs() -> list[Program]:
    """Every ```python program of every page, grouped by ``continues``."""
    programs: list[Program] = []
    for path in pages():
        files: list[Block] = []
        current: Program | None = None
        for b in blocks(path):
            if b.lang != "python":
                continue
            if b.file is not None:
                files.append(b)
                continue
            if b.mark == "continues":
                if current is None:
                    raise ValueError(f"{b.ident}: 'continues' but no earlier python block")
                current.parts.append(b)
                continue
            current = Program(b, [b], list(files))
            programs.append(current)
    return programs


def shell_blocks() -> list[Block]:
    return [b for path in pages() for b in blocks(path) if b.lang in ("bash", "sh", "shell")]


def commands(block: Block) -> list[str]:
    """The command lines of a shell block (comments and blank lines dropped, ``\\`` joined)."""
    text = re.sub(r"\\\n\s*", " ", block.code)
    lines = [re.sub(r"\s+#.*$", "", li).strip() for li in text.splitlines()]
    return [li for li in lines if li and not li.startswith("#")]

"""docs/MIGRATING.md has a block per library it migrates from. Every block runs as printed, in
a fresh Python, in tests/docs/test_snippets.py (the blocks hold their own assertions against
torchvision, timm, albumentations, kornia and DALI)."""

from __future__ import annotations

import re
from pathlib import Path

from snippets import python_programs

PAGE = Path(__file__).resolve().parents[2] / "docs" / "MIGRATING.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL)


def _section(block: str) -> str:
    text = PAGE.read_text()
    head = text[:text.index(block)].rsplit("\n## ", 1)[-1]
    return head.split("\n", 1)[0].strip()


def test_the_page_has_a_block_per_library():
    sections = {_section(b) for b in BLOCKS}
    assert sections == {"torchvision v2", "timm", "albumentations", "kornia",
                        "NVIDIA DALI (native operators)"}


def test_every_block_runs_as_printed_in_the_snippet_tests():
    """test_snippets.py runs each program of the page on the CPU: every block is in one."""
    programs = [p for p in python_programs() if p.first.page == "docs/MIGRATING.md"]
    assert not [p.first.ident for p in programs if p.gpu]
    ran = "\n".join(p.code for p in programs)
    assert BLOCKS and all(block.strip() in ran for block in BLOCKS)

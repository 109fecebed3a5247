"""docs/MIGRATING.md: every Python block on the page runs, each in a fresh namespace (the blocks
hold their own assertions against torchvision, timm, albumentations, kornia and DALI)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(BLOCKS)),
                         ids=[f"{i}-{_section(b).split()[0]}" for i, b in enumerate(BLOCKS)])
def test_block_runs(index):
    exec(compile(BLOCKS[index], f"docs/MIGRATING.md block {index}", "exec"), {})  # noqa: S102

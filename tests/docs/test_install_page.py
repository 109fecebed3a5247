"""docs/getting-started/install.md: the table of which package an op comes from is the entry
points of augjax's and augjax-contrib's pyproject.toml, row for row (every op once, in its
package), and the page's install commands are the checkout's; every page (and augjax's error
messages) quotes the extras of its ``pip install`` commands."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "getting-started" / "install.md").read_text(encoding="utf-8")
START, END = "<!-- op-packages: start", "<!-- op-packages: end -->"


def declared(pyproject: Path) -> set[str]:
    return set(tomllib.loads(pyproject.read_text())["project"]["entry-points"]["augjax.ops"])


def test_the_op_package_table_is_the_entry_points_of_both_packages():
    assert PAGE.count(START) == 1 and PAGE.count(END) == 1
    table = PAGE.split(START, 1)[1].split(END, 1)[0]
    by_package: dict[str, list[str]] = {}
    for row in table.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        by_package.setdefault(cells[0].strip("`"), []).extend(re.findall(r"`(\w+)`", cells[2]))
    assert set(by_package) == {"augjax", "augjax-contrib"}
    for package, ops in by_package.items():
        assert len(ops) == len(set(ops)), (package, ops)
    assert set(by_package["augjax"]) == declared(ROOT / "pyproject.toml")
    assert set(by_package["augjax-contrib"]) == declared(ROOT / "augjax_contrib" / "pyproject.toml")
    assert "gaussian_blur" in by_package["augjax"]  # the recipes' blur needs no second package


def test_install_commands_are_the_checkouts_and_quote_their_extras():
    install = PAGE.split("## Install", 1)[1].split("## Support matrix", 1)[0]
    commands = re.findall(r"`(pip install [^`]*)`", install)
    assert 'pip install ".[dali,demo]" ./augjax_contrib' in commands
    for cmd in commands:  # zsh reads an unquoted [...] as a file pattern
        assert all(t[0] in "\"'" for t in cmd.split() if "[" in t), f"unquoted extras: {cmd}"


def test_every_page_and_message_quotes_the_extras_of_its_pip_installs():
    """``pip install augjax[grain]`` fails in zsh (no matches found): every page, and every
    error message and docstring of augjax, quotes them."""
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "augjax_contrib" / "README.md",
             *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "augjax").rglob("*.py"))]
    unquoted = []
    for page in pages:
        for line in page.read_text(encoding="utf-8").splitlines():
            for cmd in re.findall(r"pip install [^`\n#]*", line):
                unquoted += [(page.name, t) for t in cmd.split() if "[" in t and t[0] not in "\"'"]
    assert not unquoted

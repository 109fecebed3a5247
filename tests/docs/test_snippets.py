"""Every code block of README.md, CONTRIBUTING.md and docs/ runs as printed (the rules:
``tests/docs/snippets.py``): each ```python program in a fresh process in an empty folder, each
```bash block of ``augjax`` commands command by command; a block that cannot run here says why
with a mark. The docs also name no internal run or session.

The processes are forked from a server that has imported NumPy, JAX, augjax, DALI and PyTorch
once (``tests/forkrun.py``, one per test process): each program still gets a process, a folder,
an environment and names of its own, without paying those imports again (1.5 to 5 CPU-s a
program)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shlex
import tempfile
from pathlib import Path

import pytest
from snippets import ROOT, blocks, commands, pages, python_programs, shell_blocks

pytest.importorskip("nvidia.dali")

PROGRAMS = python_programs()
SHELL = shell_blocks()
TIMEOUT = 600


@pytest.fixture(scope="session")
def snippet_env():
    """The environment of every snippet: this checkout first on the path, and the augjax cache
    folder that tests/conftest.py gives the session's processes (``AUGJAX_CACHE_DIR``: later
    snippets, on any worker, reuse earlier compilations; nothing goes to ~)."""
    assert os.environ.get("AUGJAX_CACHE_DIR"), "tests/conftest.py sets the processes' cache"
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "MPLBACKEND": "Agg"}


@pytest.fixture(scope="module")
def python(snippet_env, fork_server):
    """``python(argv, cwd)``: ``python *argv`` run in ``cwd`` with the snippets' environment, in
    a process forked from the test process's server (tests/conftest.py)."""
    return lambda argv, cwd: fork_server.run(argv, cwd, env=snippet_env, timeout=TIMEOUT)


def _python_params():
    return [pytest.param(p, id=p.first.ident, marks=[pytest.mark.gpu] if p.gpu else [])
            for p in PROGRAMS]


@pytest.mark.slow
@pytest.mark.parametrize("program", _python_params())
def test_python_block_runs_as_printed(program, tmp_path, python):
    for f in program.files:
        target = tmp_path / f.file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f.code, encoding="utf-8")
        if target.suffix == ".py":
            compile(f.code, f"{f.ident} ({f.file})", "exec")
    script = tmp_path / "snippet.py"
    script.write_text(program.code, encoding="utf-8")
    res = python([str(script)], tmp_path)
    assert res.returncode == 0, (f"{program.first.ident} failed as printed:\n"
                                 f"{res.stdout[-2000:]}\n{res.stderr[-4000:]}")


def _argv(line: str) -> list[str]:
    """The arguments of this Python for ``augjax ...`` (its augjax) and for ``python
    examples/X.py ...`` (the checkout's examples/)."""
    argv = shlex.split(line)
    if argv[0] == "augjax":
        return ["-c", "import sys; from augjax.cli.main import main; "
                      "sys.exit(main(sys.argv[1:]))", *argv[1:]]
    return [str(ROOT / argv[1]), *argv[2:]]


def _runnable(block) -> bool:
    lines = commands(block)
    return bool(lines) and all(li.split()[0] == "augjax" or (
        li.split()[0] == "python" and li.split()[1].startswith("examples/")) for li in lines)


def _shell_params():
    return [pytest.param(b, id=b.ident, marks=[pytest.mark.gpu] if b.mark == "gpu" else [])
            for b in SHELL if _runnable(b) and b.mark not in ("install", "cluster")]


@pytest.fixture(scope="session")
def passed_lines(testrun_uid):
    """The folder of this test run (every xdist worker's) where a command line that ran as
    printed leaves its mark: README and docs/index.md both show ``augjax demo`` (~45 CPU-s),
    and it runs once in the run, whichever worker gets either block."""
    folder = Path(tempfile.gettempdir()) / f"augjax-snippet-lines-{testrun_uid}"
    folder.mkdir(exist_ok=True)
    return folder


@contextlib.contextmanager
def _once(folder: Path, line: str):
    """Holds ``line``'s lock (a worker running it makes the others wait for its result) and
    yields its mark: the line passed in this run where the file exists."""
    mark = folder / hashlib.sha256(line.encode()).hexdigest()[:16]
    with open(f"{mark}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield mark


@pytest.mark.slow
@pytest.mark.parametrize("block", _shell_params())
def test_commands_run_as_printed(block, tmp_path, python, passed_lines):
    for line in commands(block):
        with _once(passed_lines, line) as passed:
            if passed.exists():
                continue
            res = python(_argv(line), tmp_path)
            assert res.returncode == 0, f"{block.ident}: `{line}` failed:\n{res.stderr[-3000:]}"
            assert res.stdout or list(tmp_path.iterdir()), f"{block.ident}: `{line}` did nothing"
            passed.touch()


def test_every_block_runs_or_says_why_not():
    """A shell block the suite cannot run carries a mark that says why; a gpu block is a real
    program; the rules find the blocks they should (a change to the parser that lost blocks
    would otherwise pass silently)."""
    unmarked = [b.ident for b in SHELL if not _runnable(b) and b.mark not in
                ("install", "cluster", "gpu")]
    assert not [b.ident for b in SHELL if b.mark == "continues"]
    assert not unmarked, f"shell blocks that neither run nor say why: {unmarked}"
    assert len(PROGRAMS) >= 15 and sum(map(_runnable, SHELL)) >= 2
    readme = [p for p in PROGRAMS if p.first.page == "README.md"]
    assert len(readme) >= 2  # the landing page's arrays and DALI examples


def test_ci_reads_the_first_pytest_line_of_a_bash_block():
    """.ci/run takes the first line that runs pytest inside a ```bash block of README.md: that
    block is marked install, and it is README's first bash block."""
    readme = [b for b in blocks(ROOT / "README.md") if b.lang == "bash"]
    first = next(b for b in readme if any("pytest" in li for li in commands(b)))
    assert first is readme[0] and first.mark == "install"


INTERNAL = re.compile(r"\bsession\s*\d+|\bsession\d+|\blease\b|\bhelper i\d+|\bi\d\d\b branch",
                      re.IGNORECASE)


def test_docs_name_no_internal_run_or_session():
    found = []
    for path in pages():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if INTERNAL.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert not found, "\n".join(found)

"""Fresh processes without paying the imports each time: a server that imports what the docs'
programs and the examples import (NumPy, JAX, augjax, DALI, PyTorch; no JAX backend started, no
program built) and forks one child per program. One server per test process serves the
session (the ``fork_server`` fixture of tests/conftest.py): the docs' programs and commands
(tests/docs/test_snippets.py) and the examples run as a user runs them (tests/examples).

A child is a new process with its own working folder, environment, ``sys.argv``,
``sys.path[0]``, ``__main__``, standard streams (files) and exit code; it ends as an
interpreter does (threads joined, ``atexit`` handlers run, streams flushed). What it
shares with a fresh ``python script.py`` is everything but the modules already imported, so
a program that relies on an import it forgot would still fail (its names are its own).

    with ForkServer(env) as server:
        res = server.run(["script.py", "arg"], cwd)     # .returncode, .stdout, .stderr

``run`` takes the argv a Python would (``["-c", code, *args]`` or ``[path, *args]``).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import suite_profile

#: What the server imports before it forks: what most of the docs' programs and the examples
#: import first, and PyTorch with torchvision's v2 transforms (about 3.5 CPU-s a process; the
#: migration guide's programs, the PyTorch example and its page import them).
PRELOAD = ("numpy", "jax", "jax.numpy", "augjax", "augjax.data", "nvidia.dali",
           "nvidia.dali.fn", "nvidia.dali.types", "nvidia.dali.plugin.jax", "PIL.Image",
           "torch", "torchvision.transforms.v2")

_SERVER = r'''
import importlib, json, os, sys
for name in sys.argv[1].split(","):
    try:
        importlib.import_module(name)
    except ImportError:
        pass
requests, replies = sys.stdin, os.fdopen(int(sys.argv[2]), "w")
# JAX's compile-path timings of a child (tests/suite_profile.py's names), written at its end
EVENTS = json.loads(sys.argv[3])
spent = {}
try:
    import jax.monitoring

    def _duration(event, secs, **_):
        name = EVENTS.get(event)
        if name:
            spent[name] = spent.get(name, 0.0) + secs
            if name == "compile_s":
                spent["compiles"] = spent.get("compiles", 0) + 1

    def _event(event, **_):
        if event == "/jax/compilation_cache/cache_hits":
            spent["hits"] = spent.get("hits", 0) + 1

    jax.monitoring.register_event_duration_secs_listener(_duration)
    jax.monitoring.register_event_listener(_event)
except ImportError:
    pass


def child(req):
    import atexit, io, runpy, threading, traceback
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    for fd, path in ((1, req["stdout"]), (2, req["stderr"])):
        out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, fd)
        os.close(out)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=False)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True,
                                  errors="backslashreplace")
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
    argv = req["argv"]
    code = 0
    try:
        if argv[0] == "-c":
            sys.argv = ["-c", *argv[2:]]
            sys.path[0] = ""
            main = type(sys)("__main__")
            main.__builtins__ = __builtins__
            sys.modules["__main__"] = main
            exec(compile(argv[1], "<string>", "exec"), main.__dict__)
        else:
            sys.argv = list(argv)
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exit:
        if exit.code is None:
            code = 0
        elif isinstance(exit.code, int):
            code = exit.code
        else:
            print(exit.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        threading._shutdown()
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
        code = code or 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    try:
        with open(req["jax"], "w") as f:
            json.dump(spent, f)
    except BaseException:
        pass
    os._exit(code & 0xFF)


for line in requests:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        replies.close()
        child(req)
    replies.write(json.dumps({"pid": pid}) + "\n")
    replies.flush()
    _, status, usage = os.wait4(pid, 0)
    replies.write(json.dumps({"code": os.waitstatus_to_exitcode(status),
                              "cpu": usage.ru_utime + usage.ru_stime}) + "\n")
    replies.flush()
'''


class ForkServer:
    """One server process (see the module doc); ``run`` one program at a time."""

    def __init__(self, env: dict[str, str], preload: tuple[str, ...] = PRELOAD) -> None:
        self.env = dict(env)
        self._tmp = tempfile.TemporaryDirectory(prefix="augjax-forkrun-")
        read, write = os.pipe()
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER, ",".join(preload), str(write),
             json.dumps({event: name for name, event in suite_profile.EVENTS.items()})],
            env=self.env,
            stdin=subprocess.PIPE, text=True, pass_fds=(write,), cwd=self._tmp.name)
        os.close(write)
        self._replies = os.fdopen(read)
        self._n = 0
        self._charged = 0.0

    def _reply(self, timeout: float | None = None) -> dict:
        if timeout is not None and not select.select([self._replies], [], [], timeout)[0]:
            raise TimeoutError
        line = self._replies.readline()
        if not line:
            raise RuntimeError(f"the fork server ended (exit {self._proc.wait()})")
        return json.loads(line)

    def run(self, argv: list[str], cwd, env: dict[str, str] | None = None,
            timeout: float | None = None) -> subprocess.CompletedProcess:
        """Runs ``argv`` as ``python *argv`` would, in ``cwd``; ``timeout`` seconds at most
        (then the child is killed and :class:`subprocess.TimeoutExpired` raised)."""
        self._n += 1
        out = Path(self._tmp.name) / f"{self._n}.out"
        err = Path(self._tmp.name) / f"{self._n}.err"
        spent = Path(self._tmp.name) / f"{self._n}.jax"
        req = {"argv": list(argv), "cwd": str(cwd), "env": dict(env or self.env),
               "stdout": str(out), "stderr": str(err), "jax": str(spent)}
        self._proc.stdin.write(json.dumps(req) + "\n")
        self._proc.stdin.flush()
        pid = self._reply()["pid"]
        try:
            reply = self._reply(timeout)
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            self._charge(self._reply()["cpu"])
            raise subprocess.TimeoutExpired(argv, timeout) from None
        code = reply["code"]
        self._charge(reply["cpu"])
        if spent.exists():
            suite_profile.charge_jax(json.loads(spent.read_text() or "{}"))
            spent.unlink()
        res = subprocess.CompletedProcess(
            [sys.executable, *argv], code, out.read_text(errors="replace"),
            err.read_text(errors="replace"))
        out.unlink()
        err.unlink()
        return res

    def _charge(self, cpu: float) -> None:
        """The child's CPU goes to the running test's profile row (tests/suite_profile.py):
        this process reaps the server, not its children. So do its JAX compile timings and
        counts (:meth:`run`)."""
        self._charged += cpu
        suite_profile.charge(cpu)

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.stdin.close()
            self._proc.wait(timeout=60)
            suite_profile.charge(-self._charged)  # they arrive with the server's own count
        self._replies.close()
        self._tmp.cleanup()

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

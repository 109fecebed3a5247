"""augjax-contrib installed for real: a wheel built from augjax_contrib/, installed with
``pip install --no-deps --target``, found by ``augjax list`` through its entry points, used in a
DALI CPU pipeline as ``augjax.ops.<op>(images)``, and gone once its files are removed. And both
packages as a user gets them: wheels of augjax and augjax-contrib built as the install page says
(``pip wheel --no-deps -w dist . ./augjax_contrib``), installed into a fresh virtual environment,
augjax alone first (its recipes need no pack), then the pack, with the ``augjax`` command the
wheel installs.

The checks run in fresh interpreters whose ``sys.path`` is the install target (or the fresh
environment), the standard library and a *view* of this environment's site-packages that leaves
out every ``augjax_contrib`` entry (an editable install's ``.pth`` and ``dist-info``, or a regular
install), and every ``augjax`` entry for the fresh environment: so the wheels are the only copies
they can see, whether or not the packages are also installed here. The dependencies (JAX, NumPy)
come from the view: nothing is downloaded.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import site
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "augjax_contrib"
DIST, VERSION = "augjax-contrib", "0.2.0"
OPS = sorted(tomllib.loads((PACK / "pyproject.toml").read_text())
             ["project"]["entry-points"]["augjax.ops"])

# Runs in the child interpreter (python -S): first make the filtered site-packages view a site
# directory (its .pth files run, so an editable augjax keeps working), then one phase.
CHILD = textwrap.dedent('''
    import io, json, site, sys
    from contextlib import redirect_stdout
    site.addsitedir(sys.argv[1])
    phase, target = sys.argv[2], sys.argv[3]

    import numpy as np
    import augjax
    from augjax.cli.main import main

    def cli(*args):
        buf = io.StringIO()
        with redirect_stdout(buf):
            code = main(list(args))
        return code, buf.getvalue()

    report = {"phase": phase}
    report["list_json"] = json.loads(cli("list", "--all", "--json")[1])
    report["list_text"] = cli("list")[1]
    if phase == "installed":
        import jax
        from nvidia.dali import fn, pipeline_def

        spec = augjax.get_op("sphere")
        report["sphere_file"] = sys.modules[spec.kernel.__module__].__file__
        x = np.random.default_rng(0).integers(0, 256, (2, 12, 16, 3), dtype=np.uint8)

        @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=3, prefetch_queue_depth=1)
        def pipe():
            images = fn.external_source(source=lambda: x, batch=True, layout="HWC")
            return augjax.ops.sphere(images), augjax.ops.box_blur(images, kernel_size=3)

        p = pipe()
        p.build()
        sphere_out, blur_out = (np.array(o.as_tensor()) for o in p.run())
        array_sphere = np.asarray(augjax.ops.sphere(x, key=jax.random.key(0)))
        array_blur = np.asarray(augjax.ops.box_blur(x, kernel_size=3))
        report["dali_equals_array"] = bool(np.array_equal(sphere_out, array_sphere)
                                           and np.array_equal(blur_out, array_blur))
        report["dali_changed_images"] = bool(not np.array_equal(sphere_out, x))
        drawn = augjax.ops.sphere.sample(x, key=jax.random.key(0))
        report["sample_fields"] = sorted(drawn)
        report["apply_replays_the_call"] = bool(np.array_equal(
            np.asarray(augjax.ops.sphere.apply(x, params=drawn)), array_sphere))
        # remove the installed files, rescan in this process: the ops must be gone
        import pathlib, shutil
        for entry in pathlib.Path(target).iterdir():
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        augjax.refresh()
        report["after_refresh"] = augjax.list_ops()
    else:
        try:
            augjax.ops.sphere
            report["lookup"] = "found"
        except augjax.OpNotFoundError as err:
            report["lookup"] = str(err)
    print("REPORT " + json.dumps(report))
''')


def site_view(root: Path, leave_out: str = "augjax_contrib") -> Path:
    """A directory of symlinks to this environment's site-packages entries, minus those whose
    name holds ``leave_out`` (``"augjax"``: augjax's and augjax-contrib's, editable or not)."""
    view = root / "site-view"
    view.mkdir()
    for sp in [*site.getsitepackages(), site.getusersitepackages()]:
        if not os.path.isdir(sp):
            continue
        for entry in Path(sp).iterdir():
            low = entry.name.lower().replace("-", "_")
            if leave_out in low or (view / entry.name).exists():
                continue
            (view / entry.name).symlink_to(entry)
    return view


def run_child(root: Path, view: Path, target: Path, phase: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "AUGJAX_"))}
    env.update(PYTHONPATH=str(target), PYTHONNOUSERSITE="1", JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-S", str(root / "child.py"), str(view), phase, str(target)],
        capture_output=True, text=True, env=env, cwd=root, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("REPORT "))
    return json.loads(line[len("REPORT "):])


def build_isolation_args() -> list[str]:
    """Build against this environment's setuptools when it can build the pack (>= 77, as the
    pack's build-system asks: offline and fast); otherwise let pip fetch it in an isolated build
    environment from the configured index (a fresh venv has an older setuptools or none)."""
    try:
        major = int(importlib.metadata.version("setuptools").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        major = 0
    return ["--no-build-isolation", "--no-index"] if major >= 77 else []


def pip(*args: str, cwd: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check",
                           "--no-input", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_wheel_installs_lists_runs_in_dali_and_uninstalls(tmp_path):
    # build the wheel from a copy, so the source tree gets no build/ or egg-info
    src = tmp_path / "build" / "augjax_contrib"
    shutil.copytree(PACK, src, ignore=shutil.ignore_patterns(
        "*.egg-info", "__pycache__", "build", "dist"))
    pip("wheel", "--no-deps", *build_isolation_args(), "-w", str(tmp_path / "dist"), str(src),
        cwd=tmp_path)
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    assert wheel.name == f"augjax_contrib-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        eps = zf.read(f"augjax_contrib-{VERSION}.dist-info/entry_points.txt").decode()
        meta = zf.read(f"augjax_contrib-{VERSION}.dist-info/METADATA").decode()
    assert {"augjax_contrib/__init__.py", "augjax_contrib/blur.py", "augjax_contrib/noise.py",
            "augjax_contrib/dropout.py", "augjax_contrib/distort.py",
            "augjax_contrib/py.typed"} <= set(names)
    assert not any(n.startswith(("tests/", "src/")) for n in names)
    assert "[augjax.ops]" in eps and all(f"{op} = augjax_contrib." in eps for op in OPS)
    assert f"Name: {DIST}\n" in meta and f"Version: {VERSION}\n" in meta
    (req,) = [ln for ln in meta.splitlines() if ln.startswith("Requires-Dist: augjax")]
    assert ">=0.2" in req and "<0.3" in req, req  # the release line with authoring API 2.0

    target = tmp_path / "target"
    pip("install", "--no-deps", "--no-index", "--target", str(target), str(wheel), cwd=tmp_path)
    (tmp_path / "child.py").write_text(CHILD)
    view = site_view(tmp_path)

    report = run_child(tmp_path, view, target, "installed")
    listed = {r["name"]: r for r in report["list_json"] if r["distribution"] == DIST}
    assert sorted(listed) == OPS
    for r in listed.values():
        assert r["version"] == VERSION and r["status"] == "available", r
        assert r["entry_point"].startswith("augjax_contrib.")
    text_rows = [ln.split() for ln in report["list_text"].splitlines()]
    assert sorted(row[0] for row in text_rows if row[1:] == [f"{DIST}=={VERSION}"]) == OPS
    assert Path(report["sphere_file"]).is_relative_to(target)  # the wheel's copy, not the tree
    assert report["dali_equals_array"] and report["dali_changed_images"]
    assert report["sample_fields"] == ["applied"] and report["apply_replays_the_call"]
    assert not set(OPS) & set(report["after_refresh"])
    assert "flip" in report["after_refresh"]

    # a fresh interpreter after the files are gone: no contrib op, a clear lookup error
    assert not any(target.iterdir())
    report = run_child(tmp_path, view, target, "removed")
    assert not [r for r in report["list_json"] if r["distribution"] == DIST]
    assert DIST not in report["list_text"] and "flip" in report["list_text"]
    assert "no op named 'sphere'" in report["lookup"]


# Runs in the fresh environment's interpreter (phase "augjax": augjax's wheel alone; "both").
VENV_CHILD = textwrap.dedent('''
    import json, sys
    import augjax

    report = {"dino": repr(augjax.recipes.dino()),
              "file": augjax.__file__, "ops": augjax.list_ops(),
              "blur": augjax.op_records("gaussian_blur")[0].distribution,
              "simclr_blurs": any("gaussian_blur" in op.name
                                  for _, group in augjax.recipes.simclr(size=32).groups
                                  for chain in group for op in chain.program()[0])}
    if "motion_blur" in report["ops"]:
        report["motion_blur"] = augjax.op_records("motion_blur")[0].distribution
    print("REPORT " + json.dumps(report))
''')


def fresh_venv(root: Path, view: Path) -> Path:
    """A virtual environment without pip whose only extra site directory is ``view`` (added by a
    ``.pth`` line, so the view's own ``.pth`` files run too)."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    (purelib,) = (venv / "lib").glob("python3*/site-packages")
    (purelib / "_deps_view.pth").write_text(f"import site; site.addsitedir({str(view)!r})\n")
    return venv


def venv_run(venv: Path, root: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "AUGJAX_"))}
    env.update(PYTHONNOUSERSITE="1", JAX_PLATFORMS="cpu", AUGJAX_CACHE_DIR=str(root / "cache"),
               PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=root, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def venv_report(venv: Path, root: Path) -> dict:
    (root / "venv_child.py").write_text(VENV_CHILD)
    out = venv_run(venv, root, str(venv / "bin" / "python"), str(root / "venv_child.py")).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("REPORT "))
    return json.loads(line[len("REPORT "):])


@pytest.mark.slow  # two wheel builds and four fresh interpreters that import JAX: ~30 CPU-s
def test_wheels_of_both_packages_install_into_a_fresh_venv(tmp_path):
    # a copy of what the wheels are built from, so the tree gets no build/ or egg-info
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("*.egg-info", "__pycache__", "build", "dist")
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "augjax", src / "augjax", ignore=ignore)
    shutil.copytree(PACK, src / "augjax_contrib", ignore=ignore)
    dist = tmp_path / "dist"
    pip("wheel", "--no-deps", *build_isolation_args(), "-w", str(dist), ".", "./augjax_contrib",
        cwd=src)  # the install page's command
    core = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (core_wheel,) = dist.glob("augjax-*.whl")
    (pack_wheel,) = dist.glob("augjax_contrib-*.whl")
    assert core_wheel.name == f"augjax-{core['version']}-py3-none-any.whl"
    with zipfile.ZipFile(core_wheel) as zf:
        names = set(zf.namelist())
        eps = zf.read(f"augjax-{core['version']}.dist-info/entry_points.txt").decode()
    assert {"augjax/__init__.py", "augjax/catalog/blur.py", "augjax/py.typed"} <= names
    assert any(n.startswith("augjax/data/") for n in names)  # the bundled photos
    assert not any(n.startswith(("augjax_contrib/", "tests/")) for n in names)
    assert "augjax = augjax.cli.main:main" in eps
    assert all(f"{op} = augjax.catalog." in eps for op in core["entry-points"]["augjax.ops"])

    view = site_view(tmp_path, leave_out="augjax")
    venv = fresh_venv(tmp_path, view)
    install = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input",
               "--python", str(venv / "bin" / "python"), "install", "--no-deps", "--no-index"]

    # augjax's wheel alone: every core op, and the recipes with their Gaussian blur
    venv_run(venv, tmp_path, *install, str(core_wheel))
    report = venv_report(venv, tmp_path)
    assert Path(report["file"]).is_relative_to(venv)  # the wheel's copy, not the tree
    assert set(report["ops"]) == set(core["entry-points"]["augjax.ops"])
    assert report["blur"] == "augjax" and report["simclr_blurs"]
    assert report["dino"].startswith("Views(")
    listed = venv_run(venv, tmp_path, str(venv / "bin" / "augjax"), "list").stdout
    rows = {ln.split()[0]: ln.split()[1:] for ln in listed.splitlines() if ln.strip()}
    assert rows["gaussian_blur"] == [f"augjax=={core['version']}"]
    assert "augjax-contrib" not in listed

    # then the pack's wheel: its ops join, listed by the installed command
    venv_run(venv, tmp_path, *install, str(pack_wheel))
    report = venv_report(venv, tmp_path)
    assert set(report["ops"]) == set(core["entry-points"]["augjax.ops"]) | set(OPS)
    assert report["motion_blur"] == DIST and report["blur"] == "augjax"
    listed = venv_run(venv, tmp_path, str(venv / "bin" / "augjax"), "list").stdout
    rows = {ln.split()[0]: ln.split()[1:] for ln in listed.splitlines() if ln.strip()}
    assert {op for op, row in rows.items() if row == [f"{DIST}=={VERSION}"]} == set(OPS)
    assert rows["gaussian_blur"] == [f"augjax=={core['version']}"]

"""The examples/ scripts as modules, for the tests of tests/examples."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_example(name: str) -> ModuleType:
    """``examples/<name>.py`` imported as module ``augjax_example_<name>`` (a new module object
    on each call)."""
    spec = importlib.util.spec_from_file_location(f"augjax_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

"""Griffe extension for the API reference (``mkdocs.yml``, mkdocstrings' ``extensions``).

- The policy factories (``rand_augment = data_first("rand_augment", RandAugment)``) are
  assignments in the source, which griffe reads statically: they would show as bare
  attributes. Each becomes a function with the signature and docstring the factory has at
  run time (its class's fields and Google-style ``Args:``), so the reference lists every
  parameter with its default and meaning.
- reST roles in every docstring (``:func:`x```, ``:class:`~augjax.Chain```) become code
  literals, which Markdown shows as code instead of raw ``:func:`` text.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path
from typing import Any

import griffe

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docstring_md import roles  # noqa: E402  (beside this file)

#: The module (under ``augjax``) and name of each policy factory.
FACTORIES = (("policies._randaugment", "rand_augment"),
             ("policies._randaugment", "trivial_augment_wide"),
             ("policies._autoaugment", "auto_augment"),
             ("policies._augmix", "augmix"))


def _annotation(value: Any) -> str | None:
    if value is inspect.Parameter.empty:
        return None
    return value if isinstance(value, str) else getattr(value, "__name__", repr(value))


def _function(attr: griffe.Object, runtime: Any, loader: griffe.GriffeLoader) -> griffe.Function:
    """A griffe function for the runtime callable ``runtime`` assigned to ``attr``."""
    signature = inspect.signature(runtime)
    params = griffe.Parameters(*[
        griffe.Parameter(
            p.name, annotation=_annotation(p.annotation),
            kind=griffe.ParameterKind[p.kind.name.lower()],
            default=None if p.default is inspect.Parameter.empty else repr(p.default))
        for p in signature.parameters.values()])
    func = griffe.Function(attr.name, parameters=params, lineno=attr.lineno,
                           endlineno=attr.endlineno,
                           returns=_annotation(signature.return_annotation))
    func.docstring = griffe.Docstring(inspect.getdoc(runtime) or "", parent=func,
                                      parser=loader.docstring_parser,
                                      parser_options=loader.docstring_options)
    return func


class AugjaxDocs(griffe.Extension):
    """Policy factories as functions; reST roles as code (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader,
                   **kwargs: Any) -> None:
        if pkg.name != "augjax":
            return
        for module, name in FACTORIES:
            mod = pkg[module]
            runtime = getattr(importlib.import_module(f"augjax.{module}"), name)
            mod.set_member(name, _function(mod.members[name], runtime, loader))
        self._roles(pkg, set())

    def _roles(self, obj: griffe.Object, seen: set[int]) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if obj.docstring is not None:
            obj.docstring.value = roles(obj.docstring.value)
        for member in obj.members.values():
            if not member.is_alias:
                self._roles(member, seen)
        for param in getattr(obj, "parameters", ()):
            if param.docstring is not None:
                param.docstring.value = roles(param.docstring.value)

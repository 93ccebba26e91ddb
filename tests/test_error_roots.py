"""Every error deniable raises derives from `DeniableError` and every warning from `DeniableWarning`, so a caller (the
CLI, a notebook, an embedding app) catches or silences one name: read off every class every module defines, so an
error class added anywhere is held to it."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

from werkzeug.exceptions import HTTPException

import deniable
from deniable.client.errors import DeniableError, DeniableWarning


def _classes_defined_in_deniable():
    for module_info in pkgutil.walk_packages(deniable.__path__, "deniable."):
        module = importlib.import_module(module_info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__:
                yield cls


def test_every_error_and_warning_has_the_one_root():
    classes = list(_classes_defined_in_deniable())
    assert len(classes) > 100  # the walk reached every room, server and storage included
    warnings = [cls for cls in classes if issubclass(cls, Warning)]
    # An HTTP exception is the server's answer (its status and JSON body name the field), not an error a caller catches.
    errors = [cls for cls in classes if issubclass(cls, BaseException) and cls not in warnings
              and not issubclass(cls, HTTPException)]
    assert DeniableError in errors and DeniableWarning in warnings
    assert [cls.__qualname__ for cls in errors if not issubclass(cls, DeniableError)] == []
    assert [cls.__qualname__ for cls in warnings if not issubclass(cls, DeniableWarning)] == []


def test_every_warning_raised_is_one_of_ours():
    """Each ``warnings.warn`` in the package names its category, and the category is a `DeniableWarning`."""
    ours = {cls.__name__ for cls in _classes_defined_in_deniable() if issubclass(cls, DeniableWarning)}
    found = []
    for path in Path(deniable.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "warnings.warn":
                category = node.args[1] if len(node.args) > 1 else next(
                    (keyword.value for keyword in node.keywords if keyword.arg == "category"), None)
                found.append((path.name, None if category is None else ast.unparse(category).split(".")[-1]))
    assert len(found) >= 3
    assert [(name, category) for name, category in found if category not in ours] == []

"""The state directory's layers import downward only (issue 16.7).

``_base`` (constants, errors, encoding, clock, crash seam) is the bottom; ``_files`` builds on
it, ``_records`` on both, and the package's ``__init__`` on all three. Read from the source with
``ast``, so a new upward import (a layer importing the package it belongs to) fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import donebell.shared.statedir as statedir

PACKAGE = "donebell.shared.statedir"
#: Each layer and the package modules it may import (at module level or inside a function).
ALLOWED = {
    "_base": set(),
    "_files": {f"{PACKAGE}._base"},
    "_records": {f"{PACKAGE}._base", f"{PACKAGE}._files"},
    "_batch": {f"{PACKAGE}._base", f"{PACKAGE}._files"},
}


def statedir_imports(module: str) -> set[str]:
    """Every ``donebell.shared.statedir...`` module that ``module``'s source imports."""
    source = Path(statedir.__file__).with_name(f"{module}.py").read_text(encoding="utf-8")
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith(PACKAGE)}
    return found


def test_every_layer_imports_only_the_layers_below() -> None:
    """_base imports no part of the package; _files only _base; _records only _base and _files."""
    for module, allowed in ALLOWED.items():
        assert statedir_imports(module) <= allowed, module


def test_the_import_reader_sees_an_upward_import() -> None:
    """The package's own __init__ imports its layers, so the reader above can fail."""
    assert {f"{PACKAGE}._base", f"{PACKAGE}._files", f"{PACKAGE}._records"} <= statedir_imports("__init__")


def test_the_package_still_exports_the_base_names() -> None:
    """Callers keep importing every public name from the package, never from its parts."""
    from donebell.shared.statedir import _base

    for name in ("SCHEMA_VERSION", "StateError", "InvalidRecord", "UnsafeStateDir", "encode", "decode", "now"):
        assert getattr(statedir, name) is getattr(_base, name)

"""tools/house_moves.py: a branch written before the issue-35 moves is rewritten to the new layout.

The lead merges branches written against the old module paths; the tool rewrites their imports,
``monkeypatch`` targets, strings and doc paths. This checks that its table is the truth (every old
module is gone, every new one exists), that it rewrites each import form, that it is idempotent,
and that the tree itself has nothing left to rewrite.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

from tools import house_moves

ROOT = Path(__file__).resolve().parents[1]

OLD = """\
from donebell.workers.hooks.context import HookContext
from donebell.workers.hooks.kick import kick_and_log
from donebell.workers.hooks import needs_you
from donebell.workers.role import PassResult, Role
from donebell.shared.text import secret_text
from donebell.shared import paths
from donebell.supervisor.install.managed import CLAUDE_ARGS, donebell_executable


def f(monkeypatch):
    monkeypatch.setattr("donebell.workers.delivery.ntfy_client.publish", None)
    return paths.codex_home(), paths.state_dir_path()
"""

NEW = """\
from donebell.workers.kit.hook_context import HookContext
from donebell.workers.hooks import kick_and_log
from donebell.workers.kit import needs_you
from donebell.workers.kit.pass_result import PassResult
from donebell.workers.role import Role
from donebell.shared.config import secret_text
from donebell.shared import paths
from donebell.workers.agents import codex as codex_folder
from donebell.workers.agents.claude.install import CLAUDE_ARGS
from donebell.workers.kit.install.managed import donebell_executable


def f(monkeypatch):
    monkeypatch.setattr("donebell.shared.ntfy.client.publish", None)
    return codex_folder.codex_home(), paths.state_dir_path()
"""


def test_each_import_form_is_rewritten() -> None:
    assert house_moves.rewrite(OLD, python=True) == NEW
    assert house_moves.rewrite(NEW, python=True) == NEW  # idempotent


def test_doc_paths_are_rewritten() -> None:
    text = "see `workers/hooks/context.py`, `hooks/stdin.py` and `workers/delivery/ntfy_client.py`"
    assert house_moves.rewrite(text, python=False) == (
        "see `workers/kit/hook_context.py`, `kit/hook_context.py` and `shared/ntfy/client.py`"
    )


def _exists(module: str) -> bool:
    parts = module.split(".")[1:]
    base = ROOT.joinpath(*parts)
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def test_the_table_is_the_truth() -> None:
    """Every old module is gone and every new one exists; every moved name is defined where it went."""
    assert [old for old in house_moves.MODULE_MOVES if _exists(old)] == []
    assert [new for new in house_moves.MODULE_MOVES.values() if not _exists(new)] == []
    missing = [
        (module, name, new)
        for (module, name), new in house_moves.NAME_MOVES.items()
        if not hasattr(importlib.import_module(new), name)
    ]
    assert missing == []


def test_the_tree_has_nothing_left_to_rewrite(tmp_path: Path) -> None:
    """Run on a copy of this tree, the tool changes nothing: no old path is left anywhere."""
    copy = tmp_path / "tree"
    for folder in ("shared", "workers", "supervisor", "tests", "docs", "benchmarks", "tools"):
        shutil.copytree(ROOT / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "README.md", copy / "README.md")
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "house_moves.py"), str(copy)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert result.stdout == ""

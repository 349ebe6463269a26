"""Every module path a doc names exists (issue 35: docs/design.md and a package docstring named
modules that no longer existed).

Read from the docs (``README.md``, ``docs/*.md``, ``tests/e2e/README.md``) and from the code's own
docstrings and comments: a file path under ``shared/``, ``workers/``, ``supervisor/``, ``tools/``,
``benchmarks/``, ``ops/`` or ``tests/`` (``workers/kit/ladder.py``, ``shared/ntfy/``) must exist in
the tree, and a dotted ``donebell.…`` name must be a module, or a name a module defines. Brace
forms (``codex.{hook,identity}``) and globs are not paths and are skipped. ``CHANGELOG.md`` is
history: it names what the code was.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP = ("shared", "workers", "supervisor", "tools", "benchmarks", "ops", "tests")
_PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(TOP) + r")/[\w./-]*[\w/])")
_DOTTED = re.compile(r"(?<![\w.])(donebell(?:\.\w+)+)")


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "tests" / "e2e" / "README.md"]


def code_texts() -> list[tuple[Path, str]]:
    """Each code module's docstrings and comments (what a reader takes for a pointer)."""
    found = []
    for folder in ("shared", "workers", "supervisor"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            parts = [
                ast.get_docstring(node) or "" for node in ast.walk(ast.parse(source)) if isinstance(node, _DOCUMENTED)
            ]
            parts += [line.split("#", 1)[1] for line in source.splitlines() if "#" in line]
            found.append((path, "\n".join(parts)))
    return found


_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def missing_paths(text: str) -> list[str]:
    """The file or folder paths in ``text`` that the tree does not have."""
    missing = []
    for match in _PATH.finditer(text):
        path = match[1].rstrip(".")
        if text[match.end() : match.end() + 1] in ("*", "{", "<") or any(c in path for c in "*{<"):
            continue  # a glob or a template (``tests/test_hooks_*.py``), not a path
        if not (ROOT / path).exists():
            missing.append(path)
    return missing


def missing_modules(text: str) -> list[str]:
    """The ``donebell.…`` names in ``text`` that are neither a module nor a name one defines."""
    missing = []
    for name in _DOTTED.findall(text.replace("{", " ")):
        if name.split(".")[1] not in ("shared", "workers", "supervisor"):
            continue  # a file name (``donebell.exe``, ``donebell.service``), not a module
        if not _resolves(name.rstrip(".")):
            missing.append(name)
    return missing


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 1, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        rest = parts[cut:]
        target: object = module
        for attr in rest:
            if not hasattr(target, attr):
                return False
            target = getattr(target, attr)
        return True
    return False


def test_every_path_a_doc_names_exists() -> None:
    bad = [f"{path.relative_to(ROOT)}: {p}" for path in doc_files() for p in missing_paths(path.read_text("utf-8"))]
    bad += [f"{path.relative_to(ROOT)}: {p}" for path, text in code_texts() for p in missing_paths(text)]
    assert not bad, "paths named in docs or docstrings that do not exist:\n" + "\n".join(sorted(set(bad)))


def test_every_module_a_doc_names_exists() -> None:
    bad = [f"{path.relative_to(ROOT)}: {m}" for path in doc_files() for m in missing_modules(path.read_text("utf-8"))]
    bad += [f"{path.relative_to(ROOT)}: {m}" for path, text in code_texts() for m in missing_modules(text)]
    assert not bad, "modules named in docs or docstrings that do not exist:\n" + "\n".join(sorted(set(bad)))


_BARE = re.compile(r"`(\w+\.py)`")


def missing_files(text: str, known: set[str]) -> list[str]:
    """Backticked bare file names (```scan_engine.py```) that no file of the tree has."""
    return [name for name in _BARE.findall(text) if name not in known]


def test_every_file_name_a_doc_names_exists() -> None:
    """A doc's bare ```name.py``` (a table cell's short form) names a file that is still somewhere."""
    known = {p.name for folder in TOP for p in (ROOT / folder).rglob("*.py")} | {"setup.py", "conftest.py"}
    known |= {"brotli.py", "h2.py"}  # a module an attacker plants (docs/security.md), not ours
    bad = [
        f"{path.relative_to(ROOT)}: {n}" for path in doc_files() for n in missing_files(path.read_text("utf-8"), known)
    ]
    assert not bad, "file names in docs that no file has:\n" + "\n".join(sorted(set(bad)))


def test_the_checks_see_a_stale_name() -> None:
    text = "see `workers/hooks/context.py` and `donebell.workers.gate.ladder`; `codex.{hook,x}`, `tests/*.py`"
    assert missing_paths(text) == ["workers/hooks/context.py"]
    assert missing_modules(text) == ["donebell.workers.gate.ladder"]
    assert missing_paths("`workers/kit/ladder.py`, `shared/ntfy/`.") == []
    assert missing_modules("`donebell.workers.kit.ladder.Evaluation`") == []
    assert missing_files("`rollout_tail.py` and `jsonl_tail.py`", {"jsonl_tail.py"}) == ["rollout_tail.py"]

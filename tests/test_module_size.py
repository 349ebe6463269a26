"""The size rule (docs/design.md "Module size"): no module in the repository over 350 lines and
no function or method over 60, except the ones listed here *and* in that section, each with why.

The checker reads each file with ``ast``: a module's size is its line count, a function's is from
its ``def`` line to its last line (decorators excluded, docstring and nested functions included).
Its own tests run it on generated files, so a rule that silently stopped counting would fail here.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("shared", "workers", "supervisor", "tools", "benchmarks", "tests")
MAX_MODULE_LINES = 350
MAX_FUNCTION_LINES = 60
MODULE = "(module)"  # the "function" column of an exception for the whole module

#: (path from the repository root, dotted function name or MODULE) -> why it may stay over the
#: limit. docs/design.md "Module size" lists the same rows; the tests below hold the two equal.
EXCEPTIONS: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Oversize:
    path: str  # from the root the checker was given, with "/" separators
    name: str  # dotted function name (Class.method, outer.inner) or MODULE
    lines: int


def oversized(root: Path, folders: tuple[str, ...] = FOLDERS) -> list[Oversize]:
    """Every module over MAX_MODULE_LINES and every function or method over MAX_FUNCTION_LINES."""
    found: list[Oversize] = []
    for folder in folders:
        for file in sorted((root / folder).rglob("*.py")):
            rel = file.relative_to(root).as_posix()
            source = file.read_text(encoding="utf-8")
            count = len(source.splitlines())
            if count > MAX_MODULE_LINES:
                found.append(Oversize(rel, MODULE, count))
            found.extend(_long_functions(rel, ast.parse(source, filename=rel), ""))
    return found


def _long_functions(rel: str, node: ast.AST, prefix: str) -> list[Oversize]:
    found: list[Oversize] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                count = (child.end_lineno or child.lineno) - child.lineno + 1
                if count > MAX_FUNCTION_LINES:
                    found.append(Oversize(rel, name, count))
            found.extend(_long_functions(rel, child, f"{name}."))
        else:
            # Functions defined under an if/try/with at any depth still count, under the same prefix.
            found.extend(_long_functions(rel, child, prefix))
    return found


def documented_exceptions(design: str) -> dict[tuple[str, str], str]:
    """The rows of the exceptions table in design.md's "Module size" section."""
    section = design.split("\n## Module size\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (`[^`]+`|\(module\)) \| (.+?) \|$", section, re.M)
    return {(path, name.strip("`")): reason for path, name, reason in rows}


def test_no_module_or_function_is_over_the_limit() -> None:
    """Every module is at most 350 lines and every function at most 60, unless it is an exception."""
    over = [o for o in oversized(REPO) if (o.path, o.name) not in EXCEPTIONS]
    assert over == [], (
        f"over the size rule (modules <= {MAX_MODULE_LINES} lines, functions <= {MAX_FUNCTION_LINES}): "
        "split them by responsibility, or add an exception here and in docs/design.md with why"
    )


def test_every_exception_is_still_over_the_limit() -> None:
    """An exception that is no longer needed (split, moved or deleted) is removed, so the list stays true."""
    current = {(o.path, o.name) for o in oversized(REPO)}
    stale = sorted(key for key in EXCEPTIONS if key not in current)
    assert stale == [], "no longer over the limit: remove these from EXCEPTIONS and from docs/design.md"


def test_design_md_lists_the_same_exceptions_with_the_same_reasons() -> None:
    """docs/design.md's "Module size" section and EXCEPTIONS name the same rows and reasons."""
    documented = documented_exceptions((REPO / "docs" / "design.md").read_text(encoding="utf-8"))
    assert documented == EXCEPTIONS


def _function(name: str, body_lines: int, indent: str = "", keyword: str = "def") -> str:
    """A function of exactly ``1 + body_lines`` lines."""
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(body_lines))
    return f"{indent}{keyword} {name}() -> None:\n{body}"


def test_the_checker_flags_a_61_line_function_and_not_a_60_line_one(tmp_path: Path) -> None:
    """On a generated file: 61-line functions and methods (async and nested ones too) are flagged
    with their dotted names and sizes; 60-line ones, and classes themselves, are not."""
    folder = tmp_path / "pkg"
    folder.mkdir()
    # Two files, so neither passes 350 lines and only functions are reported.
    flat = (
        _function("fits", 59)
        + _function("too_long", 60)
        + "class Holder:\n"
        + _function("fits", 59, "    ")
        + _function("too_long", 60, "    ")
    )
    nested = (
        "def outer() -> None:\n"
        + _function("inner", 60, "    ")
        + "if True:\n"
        + _function("conditional", 60, "    ", keyword="async def")
    )
    (folder / "flat.py").write_text(flat, encoding="utf-8")
    (folder / "nested.py").write_text(nested, encoding="utf-8")
    found = {(o.name, o.lines) for o in oversized(tmp_path, ("pkg",))}
    # outer is its def line plus the 61 lines of its inner function.
    assert found == {("too_long", 61), ("Holder.too_long", 61), ("outer", 62), ("outer.inner", 61), ("conditional", 61)}


def test_the_checker_flags_a_351_line_module_and_not_a_350_line_one(tmp_path: Path) -> None:
    """Module size is the line count: 350 lines pass, 351 fail, in subfolders too."""
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "fits.py").write_text("x = 1\n" * 350, encoding="utf-8")
    (tmp_path / "pkg" / "sub" / "long.py").write_text("x = 1\n" * 351, encoding="utf-8")
    assert oversized(tmp_path, ("pkg",)) == [Oversize("pkg/sub/long.py", MODULE, 351)]


def test_the_design_md_parser_reads_rows_and_stops_at_the_next_section() -> None:
    """Both row shapes (a function, the whole module) are read; a later section's table is not."""
    design = textwrap.dedent(
        """\
        # title

        ## Module size

        | module | function | why |
        |---|---|---|
        | `a/b.py` | `C.run` | one reason |
        | `a/c.py` | (module) | another reason |

        ## Next

        | `a/d.py` | `f` | not an exception |
        """
    )
    assert documented_exceptions(design) == {("a/b.py", "C.run"): "one reason", ("a/c.py", MODULE): "another reason"}

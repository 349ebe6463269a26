"""The command line shared by the generators of checked-in files (docs page, settings view)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def write_or_check(
    prog: str, doc: str | None, default_output: Path, render: Callable[[], str], argv: list[str] | None
) -> int:
    """``<prog> [--check] [--output PATH]``: write the rendered file, or exit 1 if it is stale."""
    parser = argparse.ArgumentParser(prog=prog, description=(doc or "").split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")
    parser.add_argument("--output", type=Path, default=default_output)
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            sys.stderr.write(f"{args.output} is out of date: run python -m tools.{prog} (from the repository root)\n")
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0

"""Whether the user's previous Codex ``notify`` (donebell's ``chain_notify``) can still start.

The Codex hook starts ``chain_notify`` with ``posix_spawnp``: a name without a slash is looked up
on ``PATH``, a path must be an executable file. A program that is gone makes every turn log
"chain_notify could not start", so install warns when it moves such a notify, and doctor says so
(``doctor/chain_notify.py``).
"""

from __future__ import annotations

import os
import shutil


def chain_program_problem(argv: object) -> str | None:
    """Why ``argv[0]`` cannot be started, or None if it can (or there is no chain)."""
    if not isinstance(argv, list) or not argv or not isinstance(argv[0], str) or not argv[0]:
        return None
    program = argv[0]
    if os.sep in program or (os.altsep and os.altsep in program):
        if not os.path.isfile(program):
            return f"{program} does not exist"
        if not os.access(program, os.X_OK):
            return f"{program} is not executable"
        return None
    return None if shutil.which(program) else f"{program} is not found on PATH"

"""Whether the user's previous Codex ``notify`` (donebell's ``chain_notify``) can still start.

The Codex hook starts ``chain_notify`` with ``posix_spawnp``: a name without a slash is looked up
on ``PATH``, a path must be an executable file. A program that is gone makes every turn log
"chain_notify could not start", so install warns when it moves such a notify, and doctor says so.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from donebell.supervisor.doctor.local import Check


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


def check_chain_notify(chain: list[str] | None) -> Check:
    """The doctor line for ``chain_notify`` (the user's previous notify, run before donebell's)."""
    from donebell.supervisor.doctor.local import OK, SKIP, WARN, Check  # doctor_local imports install_codex

    if not chain:
        return Check("chain_notify", SKIP, "no previous Codex notify to run first")
    problem = chain_program_problem(chain)
    if problem:
        return Check(
            "chain_notify",
            WARN,
            f"your previous Codex notify cannot start: {problem}",
            "install that program again, or drop it: `donebell config unset chain_notify`",
            {"chain_notify": chain},
        )
    return Check(
        "chain_notify", OK, f"your previous Codex notify {chain[0]} runs first", details={"chain_notify": chain}
    )

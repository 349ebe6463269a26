"""doctor's ``chain_notify`` check: can the user's previous Codex ``notify`` still start?

The reason a program cannot start is install's knowledge (``install/chain_check.py``, which warns
when install moves such a notify); this module only turns it into a doctor line, so install never
imports doctor.
"""

from __future__ import annotations

from donebell.workers.kit.install.checks import OK, SKIP, WARN, Check
from donebell.workers.agents.codex.chain_check import chain_program_problem


def check_chain_notify(chain: list[str] | None) -> Check:
    """The doctor line for ``chain_notify`` (the user's previous notify, run before donebell's)."""
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

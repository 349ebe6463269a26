"""The lean core: the only modules that may bend the code for start-up time, named once.

Two entry points start often enough that each millisecond of imports counts against a ~10 ms
interpreter start: ``donebell hook …`` (inside every agent turn) and the remote scanner's quick run
(once a minute per watched root). The modules they import, and only those, keep to the lean rules
(docs/design.md, "Hook path import budget"; docs/hooks.md, "Speed"):

* no ``typing``, ``pathlib``, ``contextlib``, ``importlib``, ``dataclasses``, ``hashlib``,
  ``subprocess``, ``logging`` at run time: typing-only imports sit under ``TYPE_CHECKING = False``
  / ``if TYPE_CHECKING:``, public ``Literal`` aliases are built on first access by a module
  ``__getattr__``, SHA-256 comes from CPython's built-in ``_sha256``;
* every other module imports ``typing`` and ``pathlib`` normally and uses none of those tricks.

``tests/test_import_cost.py`` holds both halves: the hook's real import list must stay inside
:data:`HOOK_PATH_MODULES` (plus the standard library minus the forbidden parts), and no module
outside :func:`is_lean` may use a lean-core trick, so the shims cannot creep back.
"""

from __future__ import annotations

#: Every donebell module ``donebell hook …`` may import (each module of a package listed in
#: :data:`HOOK_PATH_PACKAGES` too).
HOOK_PATH_MODULES: tuple[str, ...] = (
    "donebell",
    "donebell.shared",
    "donebell.shared.config",  # the package docstrings only: importing a part loads no other
    "donebell.shared.process",
    "donebell.shared.text",
    "donebell.supervisor",  # the package of the CLI (an empty __init__)
    "donebell.supervisor.cli",  # the command table: dispatch points down from the top layer
    "donebell.shared.process.hook_signals",  # the builtin _signal only
    "donebell.shared.paths",
    # the platform seam: the choice (os and sys only) and atomic replace; the hook's other platform
    # choices are implemented where they are used (paths, process.liveness, kit.hook_context)
    "donebell.shared.platform",
    "donebell.shared.platform.files",
    "donebell.shared.config.fields",  # the generated field table and the one normalizer of every reader
    "donebell.shared.config.schema",  # and the config file's reading
    "donebell.shared.config.coerce",
    "donebell.shared.keys",
    "donebell.shared.lean_json",  # json's loads and dumps on its C accelerator: no json package, no re
    "donebell.shared.statedir",
    "donebell.shared.statedir._base",  # the package's hook-path layers (not _roles, _upkeep, _wake)
    "donebell.shared.statedir._files",
    "donebell.shared.statedir._records",
    "donebell.shared.records",
    "donebell.shared.ingest",
    "donebell.workers.agents",  # LazyAgent, the object each agent declares; importing a part loads no other
    "donebell.workers.agents.registry",  # which agent a hook command names; imports that one agent only
    "donebell.workers.agents.codex",  # each agent's package declares its AGENT: the registry loads it
    "donebell.workers.agents.codex.hook",  # ``hook codex-stop | codex-notify | codex-permission``
    "donebell.workers.agents.codex.hook_evidence",
    "donebell.workers.agents.codex.identity",
    "donebell.workers.agents.codex.needs_you",  # ``hook codex-permission``
    "donebell.workers.agents.claude",
    "donebell.workers.agents.claude.hook",  # ``hook claude``
    "donebell.workers.agents.claude.outcome",
    "donebell.workers.agents.claude.session",
    "donebell.workers.agents.claude.needs_you",  # PermissionRequest and the needs-type Notifications
    "donebell.shared.bounded_read",  # every bounded, non-blocking read of an agent's file
    "donebell.workers.agents.claude.goal_status",  # the Claude hook's bounded transcript tail (goal marker, outcome)
    "donebell.workers.agents.copilot",
    "donebell.workers.agents.copilot.hook",  # ``hook copilot <event>``
    "donebell.workers.agents.copilot.paths",
    "donebell.workers.agents.copilot.needs_you",  # notification permission_prompt, permissionRequest
    "donebell.shared.process.liveness",
    "donebell.shared.process.groups",  # spawn_detached: os.posix_spawn, nothing imported before it is needed
    "donebell.shared.text.redaction",  # only with include_message (or a StopFailure's error_details)
    "donebell.workers",
    "donebell.workers.kit",  # the package docstring only: importing a part loads no other
    "donebell.workers.kit.hook_context",  # what every hook run shares: its input, state directory, config keys, log
    "donebell.workers.kit.needs_you",  # the needs-you record (PermissionRequest, needs-type notifications)
    "donebell.workers.kit.approval_wait",  # with approvals on: the wait for the phone's answer
    "donebell.workers.kit.approval_lean",  # while it waits: the sleep between its checks (Linux)
    "donebell.workers.kit.approval_sleep",  # that sleep itself, run bare (python -I -S): builtins only
    "donebell.workers.agents.codex.chain_notify",  # ``hook codex-notify``: the user's previous notifier
)
#: Packages whose every module is on the hook path.
HOOK_PATH_PACKAGES: tuple[str, ...] = ("donebell.workers.hooks",)

#: The remote scanner's quick run (``workers/scanners/remote_scan_child.py``): standard library and StateDir
#: until a full scan is needed (``tests/test_remote_scanner_quick_runs.py`` checks its imports).
REMOTE_QUICK_SCAN_MODULES: tuple[str, ...] = (
    "donebell.workers.scanners.remote_scan_child",
    "donebell.workers.scanners.remote_root_summary",
    "donebell.workers.agents.codex.rollout_files",
    "donebell.shared.process.orphans",
)


def on_hook_path(module: str) -> bool:
    """May ``donebell hook …`` import ``module``?"""
    return module in HOOK_PATH_MODULES or any(
        module == package or module.startswith(package + ".") for package in HOOK_PATH_PACKAGES
    )


def is_lean(module: str) -> bool:
    """Is ``module`` in the lean core (and so allowed, and obliged, to keep to the lean rules)?"""
    return on_hook_path(module) or module in REMOTE_QUICK_SCAN_MODULES

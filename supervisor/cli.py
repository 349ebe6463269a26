"""The ``donebell`` command: a thin dispatcher that imports only what the subcommand needs.

``donebell hook ...`` runs inside the agent's turn, so it is dispatched on ``sys.argv`` before
argparse or any third-party module loads (see ``tests/test_import_cost.py``). Every other
subcommand lives in its own module with its own argument parser; this file maps names to them.
"""

from __future__ import annotations

import sys

#: Exit status of a configuration error (sysexits' EX_CONFIG), for every command.
EXIT_CONFIG = 78

#: Exit status of an unusable state directory (sysexits' EX_CANTCREAT), as ``run`` has always used.
EXIT_STATE_DIR = 73
#: Commands that read or write the state directory: an unusable one is said in one line, exit 73
#: (``hook`` says it itself and exits 0; ``doctor`` reports it as its failing ``state_dir`` check).
NEEDS_STATE_DIR = frozenset({"run", "status", "test", "explain", "log", "worker"})

#: subcommand -> "module:function"; each function takes the remaining argv and returns an exit code.
COMMANDS: dict[str, str] = {
    "run": "donebell.supervisor.run:main",
    "worker": "donebell.workers.role:main",
    "status": "donebell.supervisor.commands.status:main",
    "hook": "donebell.workers.hooks:main",
    "install": "donebell.supervisor.install.command:main_install",
    "uninstall": "donebell.supervisor.install.command:main_uninstall",
    "doctor": "donebell.supervisor.doctor.command:main",
    "test": "donebell.supervisor.commands.sendtest:main",
    "explain": "donebell.supervisor.commands.explain:main",
    "config": "donebell.supervisor.commands.config_cli:main",
    "log": "donebell.supervisor.commands.log_command:main",
}

USAGE = """usage: donebell <command> [options]

donebell sends exactly one push notification (through an ntfy server) when a root OpenAI Codex,
Claude Code or GitHub Copilot CLI task is truly done: not on every turn, not while a subagent,
goal or background task still runs, never twice, and never lost when the network, a process or
the machine fails.

commands:
  install [--codex] [--claude] [--copilot] [--service systemd|launchd|task-scheduler|none] [--dry-run]
                           wire every agent found (hooks) and start the background service;
                           --dry-run shows the exact diff of every file it would touch
  uninstall [--codex] [--claude] [--copilot] [--service ...] [--purge [--yes]]
                           take back what install added; --purge also deletes the state and config
  status [--json]          is the service running: the supervisor, each role, the queue
  doctor [--json]          check config, hooks (and Codex trust), service, server, clock, queue
  test [--json] [--wait SECONDS] [--expire-after SECONDS]
                           send one test notification through the outbox (it replaces older
                           queued tests; unsent after --expire-after, 300 s, it expires)
  log [--last N] [--follow] [--json]
                           recent decisions: notified, suppressed and why, waiting (and for what),
                           dead, and every tap from the phone
  explain ID [--json]      why did (or didn't) it notify? ID: the #id on the phone, a thread or
                           session id, an ntfy sequence or message id, or an event key
  config init [--server URL]|show|check|path|set KEY VALUE|unset KEY|rotate-wake-key
                           write, print, validate or change the configuration (one key at a time)
  run                      run the supervisor and its roles in the foreground (what the service starts)
  worker ROLE [--once] [--debug]
                           run one role by hand: delivery [--until-idle] | local-scanner [--scan-scope all]
                           | remote-scanner | maintenance | wake
  hook codex-stop|codex-notify|codex-permission|claude|copilot EVENT
                           what the agents run (install wires it): records the signal, never blocks

options: --version, --help; `donebell COMMAND --help` describes a command's options
environment: DONEBELL_CONFIG (the config file), DONEBELL_STATE_DIR, DONEBELL_<KEY> (overrides a key)
"""


def _resolve(spec: str) -> object:
    module_name, func_name = spec.split(":")
    # __import__ rather than importlib.import_module: the importlib package (and the
    # warnings module it loads) would add to every hook's start-up.
    __import__(module_name)
    return getattr(sys.modules[module_name], func_name)


#: The exit status of a command whose reader closed the pipe (128 + SIGPIPE, as for `cat | head`).
EXIT_CLOSED_PIPE = 141


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    hook_process = argv is None and args[:1] == ["hook"]  # a caller passing argv gets its code back
    if hook_process:
        # A hook lives for milliseconds and makes little garbage; the collector's passes during
        # its imports free nothing and cost ~5 % of its CPU. One that waits for the phone turns
        # it back on (workers/hooks).
        import gc

        gc.disable()
    try:
        code = _dispatch(args)
        sys.stdout.flush()  # a closed pipe shows here, not as a traceback at interpreter exit
    except BrokenPipeError:
        # `donebell config show | head -3`: the reader is gone. Exit quietly; point stdout at
        # /dev/null so the interpreter's own final flush cannot raise again.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = 0 if args[:1] == ["hook"] else EXIT_CLOSED_PIPE
    if hook_process:
        _exit_now(code)
    return code


def _exit_now(code: int) -> None:
    """End a hook process without the interpreter's finalization.

    The hook's work is durable and its output flushed by now (every file it wrote is closed; it
    starts no thread and registers no ``atexit`` hook), so tearing down the modules it imported
    would only cost the agent's turn time: ~15 % of the hook's CPU (docs/benchmarks.md, "The
    hook's start-up").
    """
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader gone or a closed stream: nothing left to say
            pass
    os._exit(code)


def _version_line() -> str:
    """``donebell X from <package folder> (Python V, <interpreter>)``, as ``pip --version`` says it:
    which of several installs (a venv, pipx, a checkout) answered is the first question of a bug report."""
    import platform
    from pathlib import Path

    from donebell.shared.version import VERSION

    package = Path(__file__).resolve().parent.parent
    return f"donebell {VERSION} from {package} (Python {platform.python_version()}, {sys.executable})\n"


def _dispatch(args: list[str]) -> int:
    if not args:  # a usage error like any other: the usage on stderr, exit 2
        sys.stderr.write(USAGE)
        return 2
    if args[0] in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0
    if args[0] == "--version":
        sys.stdout.write(_version_line())
        return 0
    command = args[0]
    spec = COMMANDS.get(command)
    if spec is None:
        sys.stderr.write(f"donebell: unknown command '{command}'\n{USAGE}")
        return 2
    if command == "hook":
        # Before the hook modules load: an agent's SIGTERM must not kill the hook before its
        # record is durable (docs/hooks.md, "Signals"); workers/hooks releases it when done.
        from donebell.shared.process import hook_signals

        hook_signals.hold()
        # A hook never hurts the agent: even an import failure exits 0 (the hook logs it).
        try:
            func = _resolve(spec)
        except Exception as exc:  # noqa: BLE001
            sys.stderr.write(f"donebell hook: internal error: {type(exc).__name__}: {exc}\n")
            return 0
    else:
        func = _resolve(spec)
    from donebell.shared.paths import RelativePathError

    originals = None
    if command != "hook":  # the agent's protocol, and its start-up budget: see scrubbed_output
        from donebell.shared.text import scrubbed_output

        originals = scrubbed_output.install()  # no configured secret reaches the terminal or a log
    try:
        needs_state = command in NEEDS_STATE_DIR or args[:2] == ["config", "rotate-wake-key"]  # the key lives there
        if needs_state and not {"-h", "--help"} & set(args):
            unusable = _state_dir_problem()
            if unusable:
                sys.stderr.write(f"donebell {command}: cannot use the state directory: {unusable}\n")
                return EXIT_STATE_DIR
        result = func(args[1:])  # type: ignore[operator]
    except RelativePathError as exc:  # DONEBELL_STATE_DIR/DONEBELL_CONFIG: refused before anything runs
        sys.stderr.write(f"donebell {command}: config error: {exc}\n")
        return EXIT_CONFIG
    finally:
        if originals is not None:
            scrubbed_output.uninstall(originals)
    return int(result or 0)


def _state_dir_problem() -> str | None:
    from donebell.shared import state_dir_check
    from donebell.shared.paths import state_dir_str

    return state_dir_check.problem(state_dir_str())


if __name__ == "__main__":
    sys.exit(main())

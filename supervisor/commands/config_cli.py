"""``donebell config init|show|check|path|set KEY VALUE|unset KEY``."""

from __future__ import annotations

import argparse
import json
import sys

from donebell.shared.config import model
from donebell.shared.paths import config_path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="donebell config", description="Manage donebell's configuration.")
    sub = parser.add_subparsers(dest="action", required=True)
    init = sub.add_parser("init", help="write a fresh config with an unguessable topic (if none exists)")
    init.add_argument("--server", default=model.DEFAULT_SERVER)
    sub.add_parser("show", help="print the effective configuration, secrets redacted")
    sub.add_parser("check", help="validate the configuration and list unused or unknown keys")
    sub.add_parser("path", help="print the config file path")
    _add_set_parsers(sub)
    sub.add_parser("rotate-wake-key", help="replace the wake ticket key: every open Continue button stops working")
    args = parser.parse_args(argv)
    if args.action in ("set", "unset"):
        return _run_set(args)

    if args.action == "path":
        print(config_path())
        return 0
    if args.action == "rotate-wake-key":
        from donebell.shared.statedir import open_state_dir
        from donebell.shared.wake_ticket import rotate_key

        rotate_key(open_state_dir())
        print(
            "wake key replaced: tickets issued before now are refused (bad-signature); "
            "a running wake role uses the new key from its next tap on"
        )
        return 0
    if args.action == "init":
        return _init(args.server)
    loaded = _load_or_report()
    if loaded is None:
        return 1
    if args.action == "show":
        if not loaded.exists and not loaded.settings.topic:  # the defaults have no topic to subscribe to
            print(
                f"donebell config show: no config file at {loaded.path} yet: run `donebell config init` "
                "(it writes one with an unguessable topic), or `donebell install`",
                file=sys.stderr,
            )
            return 1
        return _show(loaded.settings)
    return _check(loaded)


def _check(loaded: model.Loaded) -> int:
    """``config check``: warnings, unused keys, then what keeps the file from working (exit 1)."""
    for warning in loaded.warnings:
        print(f"warning: {warning}")
    if loaded.unused_legacy:
        print(f"accepted but unused (reference notifier keys): {', '.join(loaded.unused_legacy)}")
    from donebell.supervisor.commands.config_problems import blocking_problems

    problems = blocking_problems(loaded.settings)
    if not loaded.exists:
        print(f"no config file at {loaded.path}: defaults apply (run 'donebell config init')")
        problems = [p for p in problems if not p.startswith("no topic")]  # init writes one
    for problem in problems:
        print(f"{loaded.path}: {problem}")
    if problems:
        return 1
    print(f"{loaded.path}: ok")
    return 0


def _init(server: str) -> int:
    """``config init [--server URL]``: a fresh file with an unguessable topic, if none exists."""
    from donebell.shared.config.secret_text import url_passwords

    if url_passwords(server):  # argv is the shell history and the process list
        print(
            "donebell config init: --server carries a password: run `donebell config init --server URL` "
            "without it, then `donebell config set server -` and type the URL on stdin",
            file=sys.stderr,
        )
        return 2
    path, created = model.init_config(server=server)
    loaded = _load_or_report()
    if loaded is None:
        return 1
    if created:
        print(f"wrote {path}")
        print(f"subscribe on your phone: {model.subscribe_url(loaded.settings)}")
    else:
        print(f"{path} already exists; left unchanged")
    return 0


def _load_or_report() -> model.Loaded | None:
    try:
        return model.load()
    except model.ConfigError as exc:
        print(f"donebell: {exc}", file=sys.stderr)
        return None


def _add_set_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``config set KEY VALUE`` and ``config unset KEY`` (supervisor/commands/config_set.py)."""
    put = sub.add_parser("set", help="set one key (validated, atomic, 0600); prints the old and new value")
    put.add_argument("key")
    put.add_argument("value", help="the value; a list as JSON or comma-separated; a secret as '-' (read from stdin)")
    drop = sub.add_parser("unset", help="remove one key from the file (its default applies again)")
    drop.add_argument("key")


def _run_set(args: argparse.Namespace) -> int:
    from donebell.supervisor.commands.config_set import main_set

    return main_set(args.key, getattr(args, "value", None), unset=args.action == "unset")


def _show(settings: model.Settings) -> int:
    """The effective settings as JSON, with the phone's subscribe URL as its own line
    (``"subscribe_url": …``); on a terminal, its QR code below (a pipe gets the JSON only)."""
    url = model.subscribe_url(settings)
    json.dump({**settings.redacted(), "subscribe_url": url}, sys.stdout, indent=2)
    sys.stdout.write("\n")
    if sys.stdout.isatty():
        from donebell.shared.text.subscribe_qr import qr_text

        sys.stdout.write(f"Subscribe on your phone (scan, or open {url}):\n{qr_text(url)}\n")
    return 0

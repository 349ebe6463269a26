"""``donebell config init|show|check|path``."""

from __future__ import annotations

import argparse
import json
import sys

from donebell.shared import config
from donebell.shared.paths import config_path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="donebell config", description="Manage donebell's configuration.")
    sub = parser.add_subparsers(dest="action", required=True)
    init = sub.add_parser("init", help="write a fresh config with an unguessable topic (if none exists)")
    init.add_argument("--server", default=config.DEFAULT_SERVER)
    sub.add_parser("show", help="print the effective configuration, secrets redacted")
    sub.add_parser("check", help="validate the configuration and list unused or unknown keys")
    sub.add_parser("path", help="print the config file path")
    sub.add_parser("rotate-wake-key", help="replace the wake ticket key: every open Continue button stops working")
    args = parser.parse_args(argv)

    if args.action == "path":
        print(config_path())
        return 0
    if args.action == "rotate-wake-key":
        from donebell.shared.statedir import open_state_dir
        from donebell.shared.wake_ticket import rotate_key

        rotate_key(open_state_dir())
        print("wake key replaced: tickets issued before now are refused (bad-signature)")
        return 0
    if args.action == "init":
        path, created = config.init_config(server=args.server)
        loaded = _load_or_report()
        if loaded is None:
            return 1
        if created:
            print(f"wrote {path}")
            print(f"subscribe on your phone: {config.subscribe_url(loaded.settings)}")
        else:
            print(f"{path} already exists; left unchanged")
        return 0
    loaded = _load_or_report()
    if loaded is None:
        return 1
    if args.action == "show":
        json.dump(loaded.settings.redacted(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    # check
    for warning in loaded.warnings:
        print(f"warning: {warning}")
    if loaded.unused_legacy:
        print(f"accepted but unused (reference notifier keys): {', '.join(loaded.unused_legacy)}")
    if not loaded.exists:
        print(f"no config file at {loaded.path}: defaults apply (run 'donebell config init')")
    elif not loaded.settings.topic:
        print(f"{loaded.path}: no topic set: notifications cannot be delivered")
        return 1
    if loaded.settings.wake_enabled:
        from donebell.workers.wake.policy import config_problem

        problem = config_problem(loaded.settings)
        if problem:
            print(f"{loaded.path}: {problem} (see docs/wake.md)")
            return 1
    print(f"{loaded.path}: ok")
    return 0


def _load_or_report() -> config.Loaded | None:
    try:
        return config.load()
    except config.ConfigError as exc:
        print(f"donebell: {exc}", file=sys.stderr)
        return None

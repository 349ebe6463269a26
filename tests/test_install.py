"""donebell install / uninstall on real files: unrelated content preserved byte for byte,
managed entries added once, the user's notify chained and restored, dry runs touch nothing."""

from __future__ import annotations

import difflib
import io
import json
import os
import stat
import tomllib
from pathlib import Path

import pytest
from donebell.shared.process.runner import Completed
from donebell.supervisor.install.command import main_install, main_uninstall
from donebell.workers.kit.install.managed import donebell_executable
from support.install_env import RecordingRunner, copy_fixture, isolate

EXE = donebell_executable()
USER_NOTIFY = ["notify-send", "Codex finished"]


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    paths = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("DONEBELL_CONFIG", str(paths["config"]))
    copy_fixture("codex-hooks.json", paths["codex"] / "hooks.json")
    copy_fixture("codex-config.toml", paths["codex"] / "config.toml")
    copy_fixture("claude-settings.json", paths["claude"] / "settings.json")
    return paths


def install(*args: str, runner: RecordingRunner | None = None) -> tuple[int, str]:
    out = io.StringIO()
    code = main_install(["--service", "none", *args], runner=runner or RecordingRunner(), out=out)
    return code, out.getvalue()


def uninstall(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main_uninstall(["--service", "none", *args], runner=RecordingRunner(), out=out, stdin=io.StringIO())
    return code, out.getvalue()


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def only_insertions(old: str, new: str) -> bool:
    """True if ``new`` is ``old`` with text inserted and nothing deleted or replaced."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return all(tag in ("equal", "insert") for tag, *_ in matcher.get_opcodes())


def without_managed(doc: dict, predicate) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """``doc`` with every group whose handlers all satisfy ``predicate`` removed."""
    hooks = {}
    for event, groups in doc["hooks"].items():
        kept = [g for g in groups if not all(predicate(h) for h in g["hooks"])]
        if kept:
            hooks[event] = kept
    return {**doc, "hooks": hooks}


def is_ours(handler: dict) -> bool:  # type: ignore[type-arg]
    return EXE in handler["command"]


def test_install_adds_managed_entries_and_preserves_everything_else(env: dict[str, Path]) -> None:
    """Install only inserts donebell's groups into hooks.json/settings.json, swaps notify, chains the old one."""
    before = tree(env["home"])
    code, out = install()
    assert code == 0, out

    old_hooks = before[".codex/hooks.json"].decode()
    new_hooks = (env["codex"] / "hooks.json").read_text()
    assert only_insertions(old_hooks, new_hooks)
    parsed = json.loads(new_hooks)
    assert parsed["hooks"]["Stop"][-1] == {
        "hooks": [
            {
                "type": "command",
                "command": f"{EXE} hook codex-stop",
                "timeout": 30,
                "statusMessage": "donebell: notify when the task is done",
            }
        ]
    }
    assert without_managed(parsed, is_ours) == json.loads(old_hooks)

    old_settings = before[".claude/settings.json"].decode()
    new_settings = (env["claude"] / "settings.json").read_text()
    assert only_insertions(old_settings, new_settings)
    settings = json.loads(new_settings)
    for event in ("Stop", "StopFailure", "UserPromptSubmit", "Notification", "SessionEnd"):
        ours = [h for g in settings["hooks"][event] for h in g["hooks"] if is_ours(h)]
        assert ours == [{**ours[0], "command": f"{EXE} hook claude", "timeout": 30}], event
    assert settings["hooks"]["Notification"][-1]["matcher"].startswith("idle_prompt|agent_completed|")
    assert settings["hooks"]["Notification"][-1]["hooks"][0]["async"] is True
    assert without_managed(settings, is_ours) == json.loads(old_settings)

    old_toml = before[".codex/config.toml"].decode().splitlines()
    new_toml = (env["codex"] / "config.toml").read_text().splitlines()
    start = old_toml.index('notify = [ "notify-send",')
    assert old_toml[:start] == new_toml[:start]
    assert new_toml[start] == f'notify = ["{EXE}", "hook", "codex-notify"]   # keep this one!'
    assert old_toml[start + 2 :] == new_toml[start + 1 :]

    config = json.loads(env["config"].read_text())
    assert config["chain_notify"] == USER_NOTIFY
    assert config["topic"].startswith("donebell-")
    assert stat.S_IMODE(env["config"].stat().st_mode) == 0o600
    backups = {name: data for name, data in tree(env["home"]).items() if ".donebell-backup-" in name}
    assert sorted(backups.values()) == sorted(before[n] for n in before)
    assert "run /hooks" in out and "donebell test" in out and f"https://ntfy.sh/{config['topic']}" in out


def test_second_install_changes_nothing(env: dict[str, Path]) -> None:
    """A second install writes no file and makes no backup."""
    install()
    snapshot = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in env["home"].rglob("*") if p.is_file()}
    code, out = install()
    assert code == 0
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in env["home"].rglob("*") if p.is_file()} == snapshot
    assert "backup:" not in out and "already in place" in out


def test_uninstall_restores_the_original_bytes(env: dict[str, Path]) -> None:
    """Uninstall after install gives back each agent file exactly, the old notify included."""
    before = tree(env["home"])
    install()
    code, out = uninstall()
    assert code == 0, out
    for name in (".codex/hooks.json", ".codex/config.toml", ".claude/settings.json"):
        assert (env["home"] / name).read_bytes() == before[name], name
    assert "chain_notify" not in json.loads(env["config"].read_text())
    assert not (env["config"].parent / "install-record.json").exists()


def test_uninstall_deletes_files_that_install_created(env: dict[str, Path]) -> None:
    """Files install created in empty homes are removed again; nothing else is left behind."""
    for path in (env["codex"] / "hooks.json", env["codex"] / "config.toml", env["claude"] / "settings.json"):
        path.unlink()
    install()
    assert tomllib.loads((env["codex"] / "config.toml").read_text())["notify"][1:] == ["hook", "codex-notify"]
    uninstall()
    assert list(env["codex"].iterdir()) == [] and list(env["claude"].iterdir()) == []


def test_dry_run_prints_the_exact_diff_and_touches_nothing(env: dict[str, Path]) -> None:
    """--dry-run output contains the very diff a real install then produces, and writes nothing."""
    before = tree(env["home"])
    code, out = install("--dry-run")
    assert code == 0
    assert tree(env["home"]) == before
    install()
    for name in (".codex/hooks.json", ".codex/config.toml", ".claude/settings.json"):
        path = str(env["home"] / name)
        expected = "".join(
            difflib.unified_diff(
                before[name].decode().splitlines(keepends=True),
                (env["home"] / name).read_text().splitlines(keepends=True),
                path,
                path,
            )
        )
        assert expected and expected in out, name


def test_dry_run_never_shows_the_token(env: dict[str, Path]) -> None:
    """The donebell config diff redacts token and password values."""
    env["config"].parent.mkdir(parents=True)
    env["config"].write_text('{"topic": "t1", "token": "tk_supersecretvalue123", "password": "hunter22"}\n')
    env["config"].chmod(0o600)
    code, out = install("--dry-run")
    assert code == 0
    assert "tk_supersecretvalue123" not in out and "hunter22" not in out
    assert '"token": "**********"' in out and '"chain_notify"' in out


def test_claude_exec_form_only_on_a_version_known_to_support_args(env: dict[str, Path]) -> None:
    """Claude 2.1.197 gets `command` + `args` (behind the SIGTERM-ignoring /bin/sh, docs/hooks.md
    "Signals"); an older or unknown Claude gets the quoted shell form."""
    new = RecordingRunner(
        {("/opt/claude", "--version"): Completed((), 0, "2.1.197 (Claude Code)\n")}, programs={"claude": "/opt/claude"}
    )
    install("--claude", runner=new)
    handler = json.loads((env["claude"] / "settings.json").read_text())["hooks"]["Stop"][-1]["hooks"][0]
    shield = ["-c", 'trap \'\' TERM HUP; exec "$0" "$@"']
    assert handler == {"type": "command", "command": "/bin/sh", "args": [*shield, EXE, "hook", "claude"], "timeout": 30}
    old = RecordingRunner(
        {("/opt/claude", "--version"): Completed((), 0, "2.0.5 (Claude Code)\n")}, programs={"claude": "/opt/claude"}
    )
    install("--claude", runner=old)
    stops = json.loads((env["claude"] / "settings.json").read_text())["hooks"]["Stop"]
    assert [h["command"] for g in stops for h in g["hooks"]][1:] == [f"{EXE} hook claude"]


def test_an_unshielded_exec_form_entry_is_upgraded_in_place_and_uninstalled(env: dict[str, Path]) -> None:
    """The exec form earlier installs wrote (no signal shield) is recognized, replaced by the
    shielded one at the same place, and `uninstall` removes the shielded entries again."""
    claude_231 = RecordingRunner(
        {("/opt/claude", "--version"): Completed((), 0, "2.1.332 (Claude Code)\n")}, programs={"claude": "/opt/claude"}
    )
    old = {"type": "command", "command": "/old/venv/bin/donebell", "args": ["hook", "claude"], "timeout": 30}
    settings = {"hooks": {"StopFailure": [{"hooks": [old]}, {"hooks": [{"type": "command", "command": "mine"}]}]}}
    (env["claude"] / "settings.json").write_text(json.dumps(settings))
    install("--claude", runner=claude_231)
    groups = json.loads((env["claude"] / "settings.json").read_text())["hooks"]["StopFailure"]
    assert [h["command"] for g in groups for h in g["hooks"]] == ["/bin/sh", "mine"]
    assert groups[0]["hooks"][0]["args"][2:] == [EXE, "hook", "claude"]
    code, _ = uninstall("--claude")
    assert code == 0
    groups = json.loads((env["claude"] / "settings.json").read_text())["hooks"]["StopFailure"]
    assert [h["command"] for g in groups for h in g["hooks"]] == ["mine"]


def test_an_older_install_elsewhere_is_replaced_in_place(env: dict[str, Path]) -> None:
    """Entries of a donebell at another path are updated at the same index and never chained."""
    old_exe = "/old/venv/bin/donebell"
    hooks = json.loads((env["codex"] / "hooks.json").read_text())
    hooks["hooks"]["Stop"].insert(0, {"hooks": [{"type": "command", "command": f"{old_exe} hook codex-stop"}]})
    (env["codex"] / "hooks.json").write_text(json.dumps(hooks, indent=2))
    (env["codex"] / "config.toml").write_text(f'notify = ["{old_exe}", "hook", "codex-notify"]\n')
    install("--codex")
    stop = json.loads((env["codex"] / "hooks.json").read_text())["hooks"]["Stop"]
    assert [h["command"] for g in stop for h in g["hooks"]] == [
        f"{EXE} hook codex-stop",
        "python3 ~/bin/lint-on-stop.py",
    ]
    assert tomllib.loads((env["codex"] / "config.toml").read_text())["notify"] == [EXE, "hook", "codex-notify"]
    assert "chain_notify" not in json.loads(env["config"].read_text())


def test_invalid_json_stops_before_anything_is_written(env: dict[str, Path]) -> None:
    """A broken settings.json is reported with its line and column, and no file changes."""
    (env["claude"] / "settings.json").write_text('{\n  "hooks": {,\n}\n')
    before = tree(env["home"])
    code, out = install()
    assert code == 1
    assert "settings.json: not valid JSON (line 2 column" in out
    assert tree(env["home"]) == before


def test_a_symlinked_settings_file_is_edited_at_its_target(env: dict[str, Path], tmp_path: Path) -> None:
    """A dotfile-manager symlink stays a symlink; its target gets the hooks."""
    target = tmp_path / "dotfiles" / "claude-settings.json"
    target.parent.mkdir()
    (env["claude"] / "settings.json").rename(target)
    (env["claude"] / "settings.json").symlink_to(target)
    install("--claude")
    assert (env["claude"] / "settings.json").is_symlink()
    assert "hook claude" in target.read_text()


def test_uninstall_leaves_a_notify_the_user_changed_since(env: dict[str, Path]) -> None:
    """If notify is no longer donebell's, uninstall keeps it and keeps chain_notify (nothing lost)."""
    install("--codex")
    path = env["codex"] / "config.toml"
    path.write_text(path.read_text().replace(f'["{EXE}", "hook", "codex-notify"]', '["my-new-notifier"]'))
    code, out = uninstall("--codex")
    assert code == 0
    assert tomllib.loads(path.read_text())["notify"] == ["my-new-notifier"]
    assert json.loads(env["config"].read_text())["chain_notify"] == USER_NOTIFY
    assert "not donebell's" in out


def test_purge_needs_confirmation_then_deletes_state_and_config(env: dict[str, Path]) -> None:
    """--purge without a terminal or --yes changes nothing; with --yes it uninstalls and deletes
    the state dir, the config and the config's backups."""
    install()
    env["state"].mkdir(parents=True)
    (env["state"] / "pending").mkdir()
    installed = tree(env["home"])
    code, out = uninstall("--purge")
    assert code == 1 and "--yes" in out
    assert tree(env["home"]) == installed  # refused before anything changed
    code, out = uninstall("--purge", "--yes")
    assert code == 0, out
    assert not env["state"].exists() and not env["config"].exists() and not env["config"].parent.exists()


def test_purge_refuses_a_folder_that_is_not_a_state_dir(env: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A mistyped DONEBELL_STATE_DIR pointing at a real folder is never deleted."""
    precious = env["home"] / "projects"
    (precious / "src").mkdir(parents=True)
    monkeypatch.setenv("DONEBELL_STATE_DIR", str(precious))
    code, out = uninstall("--purge", "--yes")
    assert code == 1 and "does not look like donebell's state directory" in out
    assert (precious / "src").is_dir()


def test_no_agent_found_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without agent homes, flags or CLIs, install says so and wires nothing."""
    paths = isolate(tmp_path, monkeypatch)
    for name in ("codex", "claude"):
        os.rmdir(paths[name])
    monkeypatch.delenv("CODEX_HOME")
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.setenv("DONEBELL_CONFIG", str(paths["config"]))
    code, out = install()
    assert code == 0 and "no Codex, Claude Code or Copilot CLI found; pass --codex, --claude or --copilot" in out
    assert not paths["codex"].exists() and not paths["claude"].exists()


def test_bom_crlf_tabs_and_table_only_toml_round_trip(env: dict[str, Path]) -> None:
    """A BOM + CRLF + tab settings.json and a CRLF config.toml with only tables come back exactly."""
    settings = "\ufeff" + json.dumps({"hooks": {"Stop": []}, "model": "opus"}, indent="\t").replace("\n", "\r\n")
    (env["claude"] / "settings.json").write_bytes(settings.encode("utf-8"))
    toml = '[profiles.fast]\r\nmodel = "gpt-5-mini"\r\n'
    (env["codex"] / "config.toml").write_bytes(toml.encode("utf-8"))
    before = tree(env["home"])
    install()
    installed = (env["claude"] / "settings.json").read_bytes()
    assert installed.startswith("\ufeff".encode()) and b"\r\n\t\t\t{" in installed
    assert tomllib.loads((env["codex"] / "config.toml").read_text())["notify"] == [EXE, "hook", "codex-notify"]
    uninstall()
    for name in (".claude/settings.json", ".codex/config.toml", ".codex/hooks.json"):
        assert (env["home"] / name).read_bytes() == before[name], name


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_purge_answered_no_uninstalls_but_keeps_state_and_config(env: dict[str, Path]) -> None:
    """At the prompt, anything but yes keeps state and config; the hooks are still removed."""
    before = tree(env["home"])
    install()
    env["state"].mkdir(parents=True)
    out = io.StringIO()
    code = main_uninstall(["--service", "none", "--purge"], runner=RecordingRunner(), out=out, stdin=_Terminal("n\n"))
    assert code == 0 and "[y/N]" in out.getvalue() and "purge skipped" in out.getvalue()
    assert env["state"].exists() and env["config"].exists()
    assert (env["codex"] / "hooks.json").read_bytes() == before[".codex/hooks.json"]

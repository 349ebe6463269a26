"""Send-time payload rendering: title, body, tags, priority, privacy gate, links, byte budget."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.config.model import Settings
from donebell.shared.text.markdown_text import cut_utf8, reduce_markdown
from donebell.shared.text.short_id import short_id
from donebell.workers.delivery.payload import MESSAGE_MAX_BYTES, render
from donebell.workers.kit.labels import short_host_name
from support.delivery_kit import THREAD, outbox_record

pytestmark = pytest.mark.usefixtures("no_outside_config")


def settings(**kw: Any) -> Settings:
    """Settings built from explicit values only (no file, no environment in these pure tests)."""
    return Settings(**{"topic": "t1", "origin": "laptop", **kw})


def test_default_done_payload() -> None:
    """A done Codex task: project title, `origin · #thread8` body, the check-mark tag, nothing optional."""
    rec = outbox_record(last_message="secret answer")
    p = render(rec, settings())
    assert p == {
        "topic": "t1",
        "title": "donebell",
        "message": "laptop · #dfa14a99",
        "tags": ["white_check_mark"],
        "sequence_id": rec["sequence_id"],
    }


def test_unicode_title_and_byte_budget() -> None:
    """A non-ASCII project name stays intact and a huge excerpt is cut so the message fits 3,500 UTF-8 bytes."""
    msg = "日本語🚀" * 2000
    rec = outbox_record(cwd="C:\\Users\\dev\\проект-🚀", last_message=msg)
    p = render(rec, settings(include_message=True, max_message_chars=100000, markdown=True))
    assert p["title"] == "проект-🚀"
    raw = p["message"].encode("utf-8")
    assert len(raw) <= MESSAGE_MAX_BYTES
    assert len(raw) > MESSAGE_MAX_BYTES - 8  # cut at the budget, not far below it
    excerpt, context = p["message"].split("\n\n")
    assert excerpt.endswith("…") and context == f"laptop · #{short_id(THREAD)}"  # the context is kept whole
    assert len(json.dumps(p, ensure_ascii=False).encode()) < 8192


def test_cut_utf8_never_splits_a_code_point() -> None:
    """Cutting at every byte position yields valid UTF-8 within the budget."""
    text = "a€𝄞é" * 10
    for limit in range(0, 60):
        out = cut_utf8(text, limit)
        assert len(out.encode("utf-8")) <= limit
        assert text.startswith(out.rstrip("…"))


def test_markdown_reduced_to_one_plain_line() -> None:
    """Fences, headings, bullets, tables, links, emphasis and code marks go; their words stay."""
    md = (
        "# Release notes\n\nFixed the **login** bug in `auth_handler` and _cleaned up_ snake_case_names.\n\n"
        "- First [item](https://example.com/a)\n- Second ![diagram](x.png)\n\n"
        '| Name | Value |\n|------|:-----:|\n| a    | 1     |\n\n```python\nprint("hi")\n```\n'
        "> quoted *text*\n---\nSee <https://example.com>.\n"
    )
    assert reduce_markdown(md) == (
        "Release notes Fixed the login bug in auth_handler and cleaned up snake_case_names. "
        'First item Second diagram Name Value a 1 print("hi") quoted text See https://example.com.'
    )
    p = render(outbox_record(last_message=md), settings(include_message=True, max_message_chars=1000))
    assert "\n" not in p["message"] and "**" not in p["message"] and "markdown" not in p


def test_markdown_opt_in_keeps_lines_and_flags_only_with_a_message() -> None:
    """`markdown: true` keeps the Markdown and sends `markdown: true` only when a message is present."""
    md = "# Title\n\n- one\n- two"
    p = render(outbox_record(last_message=md), settings(include_message=True, markdown=True))
    assert p["markdown"] is True
    assert p["message"] == "# Title\n\n- one\n- two\n\nlaptop · #dfa14a99"
    no_msg = render(outbox_record(last_message=md), settings(include_message=False, markdown=True))
    assert "markdown" not in no_msg


def test_include_message_is_a_send_time_privacy_gate() -> None:
    """A record captured with text never sends it while include_message is off."""
    rec = outbox_record(last_message="the private final answer")
    assert "private" not in json.dumps(render(rec, settings(include_message=False)))
    on = render(rec, settings(include_message=True))
    assert on["message"] == "the private final answer · laptop · #dfa14a99"


def test_excerpt_cut_at_max_message_chars() -> None:
    """The excerpt is at most max_message_chars code points, ending in an ellipsis when cut."""
    rec = outbox_record(last_message="x" * 50)
    p = render(rec, settings(include_message=True, max_message_chars=10))
    assert p["message"] == "xxxxxxxxx… · laptop · #dfa14a99"
    assert render(rec, settings(include_message=True, max_message_chars=0))["message"] == "laptop · #dfa14a99"


def test_failed_and_stopped_wording_and_tags() -> None:
    """Failed turns say `failed: <error>` with tag x; aborted turns say `stopped` with tag stop_sign."""
    failed = render(outbox_record(outcome="failed", error="stream\ndisconnected"), settings())
    assert failed["tags"] == ["x"]
    assert failed["message"] == "failed: stream disconnected · laptop · #dfa14a99"
    assert render(outbox_record(outcome="failed"), settings())["message"].startswith("failed · ")
    stopped = render(outbox_record(outcome="stopped"), settings(tags=["tada"]))
    assert stopped["tags"] == ["stop_sign"]
    assert stopped["message"] == "stopped · laptop · #dfa14a99"
    assert render(outbox_record(), settings(tags=["tada", "computer"]))["tags"] == ["tada", "computer"]


def test_outcome_leads_the_final_message() -> None:
    """With the message included, a failed turn still reads `failed: …` first, then the excerpt."""
    rec = outbox_record(outcome="failed", error="server_error", last_message="API Error: 529 Overloaded.")
    plain = render(rec, settings(include_message=True))["message"]
    assert plain == "failed: server_error · API Error: 529 Overloaded. · laptop · #dfa14a99"
    marked = render(rec, settings(include_message=True, markdown=True))["message"]
    assert marked.startswith("failed: server_error\n\nAPI Error: 529 Overloaded.")


def test_priority_omitted_only_when_default() -> None:
    """Priority 3 is ntfy's default and is omitted; any other value is sent as an int."""
    assert "priority" not in render(outbox_record(), settings(priority=3))
    assert render(outbox_record(), settings(priority=5))["priority"] == 5
    assert render(outbox_record(), settings(priority=1))["priority"] == 1


def test_task_link_opt_ins() -> None:
    """click and the view action appear only when opted in, only for canonical Codex UUIDs."""
    url = f"https://chatgpt.com/codex/tasks/{THREAD}"
    rec = outbox_record()
    off = render(rec, settings())
    assert "click" not in off and "actions" not in off
    click = render(rec, settings(include_task_link=True))
    assert click["click"] == url and "actions" not in click
    both = render(rec, settings(include_task_link=True, include_task_link_action=True))
    assert both["actions"] == [{"action": "view", "label": "Open task", "url": url}]
    for thread in (THREAD.upper(), "not-a-uuid", THREAD.replace("-", "")):
        odd = render(outbox_record(thread_id=thread), settings(include_task_link=True, include_task_link_action=True))
        assert "click" not in odd and "actions" not in odd
    claude = render(
        outbox_record(provider="claude", thread_id=THREAD),
        settings(include_task_link=True, include_task_link_action=True),
    )
    assert "click" not in claude and "actions" not in claude


def _state_db(home: Path, rows: list[tuple[str, str, str | None]]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(home / "state_5.sqlite")
    conn.execute("CREATE TABLE threads (id TEXT PRIMARY KEY, title TEXT NOT NULL, name TEXT)")
    conn.executemany("INSERT INTO threads VALUES (?, ?, ?)", rows)
    conn.commit()
    conn.close()


def test_thread_title_from_sqlite(tmp_path: Path) -> None:
    """With include_thread_title the exact thread's title is the title and the project moves to the body."""
    home = tmp_path / "codex"
    _state_db(home, [(THREAD, "Fix the flaky\nlogin test", None), ("other", "Other thread", None)])
    rec = outbox_record(codex_home=str(home), sqlite_home=str(home))
    p = render(rec, settings(include_thread_title=True))
    assert p["title"] == "Fix the flaky login test"
    assert p["message"] == "donebell · laptop · #dfa14a99"
    assert render(rec, settings())["title"] == "donebell"


def test_thread_title_prefers_user_name_then_session_index(tmp_path: Path) -> None:
    """A user-given name beats the automatic title; without a row, session_index.jsonl's newest entry is used."""
    home = tmp_path / "codex"
    _state_db(home, [(THREAD, "auto title", "My name")])
    rec = outbox_record(codex_home=str(home), sqlite_home=str(home))
    assert render(rec, settings(include_thread_title=True))["title"] == "My name"
    other = tmp_path / "codex2"
    other.mkdir()
    (other / "session_index.jsonl").write_text(
        json.dumps({"id": THREAD, "thread_name": "old name", "updated_at": "1"})
        + "\n"
        + "not json\n"
        + json.dumps({"id": THREAD, "thread_name": "new name", "updated_at": "2"})
        + "\n",
        encoding="utf-8",
    )
    rec2 = outbox_record(codex_home=str(other))
    assert render(rec2, settings(include_thread_title=True))["title"] == "new name"
    missing = outbox_record(codex_home=str(tmp_path / "nowhere"))
    assert render(missing, settings(include_thread_title=True))["title"] == "donebell"


def test_full_path_and_stats() -> None:
    """include_full_path adds the working directory; include_stats adds duration and tokens."""
    rec = outbox_record(cwd="/srv/work/api", stats={"duration_ms": 252_000, "total_tokens": 12_345})
    p = render(rec, settings(include_full_path=True, include_stats=True))
    assert p["message"] == "/srv/work/api · 4m 12s · 12.3k tokens · laptop · #dfa14a99"
    assert render(rec, settings())["message"] == "laptop · #dfa14a99"
    long = outbox_record(stats={"duration_ms": 7_500_000, "total_tokens": 2_000_000})
    assert render(long, settings(include_stats=True))["message"].startswith("2h 5m · 2M tokens · ")


def test_origin_rules() -> None:
    """Config origin wins over a hook-recorded origin; a remote root's label wins; else the host name."""
    assert render(outbox_record(origin="old"), settings())["message"] == "laptop · #dfa14a99"
    remote = outbox_record(origin="wsl-ubuntu", source="remote-scanner")
    assert render(remote, settings())["message"] == "wsl-ubuntu · #dfa14a99"
    assert render(outbox_record(), settings(origin=""))["message"] == f"{short_host_name()} · #dfa14a99"


def test_claude_record_uses_session_id() -> None:
    """A Claude record's #id comes from its session id and it gets no task link."""
    rec = outbox_record(provider="claude", thread_id="4b9e2f6a-1c3d-4e5f-8a7b-9c0dabcdef12", cwd="/w/app")
    p = render(rec, settings(include_task_link=True))
    assert p["message"] == "laptop · #abcdef12" and p["title"] == "app"
    assert p["sequence_id"].startswith("claude-")


@pytest.mark.parametrize(
    "field,value",
    [("cwd", ["x"]), ("last_message", 42), ("stats", "fast"), ("thread_id", None), ("outcome", {"x": 1}), ("error", 3)],
)
def test_odd_field_types_do_not_break_rendering(field: str, value: Any) -> None:
    """A wrongly typed field is ignored instead of failing the delivery."""
    rec = outbox_record()
    rec[field] = value
    p = render(rec, settings(include_message=True, include_stats=True, include_full_path=True))
    assert p["topic"] == "t1" and isinstance(p["message"], str)


def test_escapes_and_surrogates_stay_within_ntfy_limits() -> None:
    """Quotes and control characters that JSON escapes cannot push the body to ntfy's 8 KiB limit."""
    rec = outbox_record(last_message='"\\' * 3000 + "\ud800 lone surrogate")
    p = render(rec, settings(include_message=True, max_message_chars=100000, markdown=True))
    body = json.dumps(p, ensure_ascii=False).encode("utf-8")
    assert len(body) < 8192
    assert p["message"].endswith(f"…\n\nlaptop · #{short_id(THREAD)}")  # the shrink cuts the excerpt, not the context


def test_test_record_wording() -> None:
    """A `donebell test` record has its own title and says it is a test."""
    rec = outbox_record(cwd=None)
    rec.update(test=True, provider="test")
    p = render(rec, settings())
    assert p["title"] == "donebell test"
    assert p["message"].startswith("test notification from donebell · laptop")

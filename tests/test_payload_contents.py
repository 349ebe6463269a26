"""What a notification carries, end to end (issue 14 items 8, 10-12): the real hook processes, the
real delivery role and the ntfy stand-in. Redaction (item 9) is in ``test_message_redaction.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.text.short_id import short_id
from support.hooks_harness import HookEnv, claude_event, claude_events
from support.ntfy_standin import NtfyStandin
from support.payload_kit import ORIGIN, Pipeline

ERR_SESSION8 = "f7bd4ca5"  # short id of the recorded 529 run (session ff6390f8-de8d-4904-a4d4-bbcff7bd4ca5)
TASK_URL = "https://chatgpt.com/codex/tasks/01a22be2-8ff4-7060-90c7-45d2cf0697b5"
#: Unicode's bidirectional formatting characters: ALM, LRM, RLM, LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


@pytest.fixture()
def pipe(tmp_path: Path, srv: NtfyStandin) -> Pipeline:
    return Pipeline(HookEnv(tmp_path), srv)


def _claude_stop(pipe: Pipeline, **changes: Any) -> dict[str, Any]:
    """The recorded print-tool prompt and its Stop (with ``changes``) through `donebell hook claude`."""
    prompt = claude_event("print-tool", "UserPromptSubmit")
    stop = {**claude_event("print-tool", "Stop"), **changes}
    pipe.hooks.claude({**prompt, **{k: v for k, v in changes.items() if k == "cwd"}})
    pipe.hooks.claude(stop)
    return stop


# --- item 8: a Claude StopFailure says what the API said -------------------------------------


def test_stop_failure_leads_with_the_kind_and_the_apis_first_line(pipe: Pipeline) -> None:
    """The recorded 529 run, include_message on: `failed: server_error — API Error: 529 Overloaded. …`, context kept.

    Before: the kind stood alone in the outcome and the API text followed as if it were the
    agent's answer (`failed: server_error · API Error: …`)."""
    pipe.configure(include_message=True)
    for payload in claude_events("print-apierror529"):
        pipe.hooks.claude(payload)
    message = pipe.only_message()
    api_text = claude_event("print-apierror529", "StopFailure")["last_assistant_message"]
    assert message["message"] == f"failed: server_error — {api_text} · {ORIGIN} · #{ERR_SESSION8}"
    assert message["tags"] == ["x"] and message["title"] == "project"


def test_stop_failure_without_message_text_sends_the_kind_only(pipe: Pipeline) -> None:
    """include_message off: the error kind always, the API's text never (not stored, not sent)."""
    for payload in claude_events("print-apierror529"):
        pipe.hooks.claude(payload)
    message = pipe.only_message()
    assert message["message"] == f"failed: server_error · {ORIGIN} · #{ERR_SESSION8}"
    assert "API Error" not in pipe.state_text() and "API Error" not in pipe.request_bodies()


def test_stop_failure_with_only_error_details_sends_their_first_line(pipe: Pipeline) -> None:
    """A prompt-too-long StopFailure carries the API's answer in error_details: its first line is sent.

    Before: error_details was stored and never shown (`failed: invalid_request`)."""
    pipe.configure(include_message=True)
    details = (
        '400 {"type":"error","error":{"type":"invalid_request_error",'
        '"message":"prompt is too long: 212000 tokens > 200000 maximum"}}\nrequest id: req_0001'
    )
    failure = claude_event("print-apierror529", "StopFailure")
    del failure["last_assistant_message"]
    pipe.hooks.claude(claude_event("print-apierror529", "UserPromptSubmit"))
    pipe.hooks.claude({**failure, "error": "invalid_request", "error_details": details})
    message = pipe.only_message()["message"]
    assert message.startswith(f"failed: invalid_request — {details.splitlines()[0]} · {ORIGIN}")
    assert "req_0001" not in message  # the first line only


# --- item 10: the task-link action needs include_task_link too --------------------------------


@pytest.mark.parametrize(
    ("link", "action", "click", "actions"),
    [
        (False, True, False, False),  # before: the action alone carried the full task URL
        (True, False, True, False),
        (True, True, True, True),
    ],
)
def test_task_link_action_requires_include_task_link(
    pipe: Pipeline, link: bool, action: bool, click: bool, actions: bool
) -> None:
    """include_task_link_action adds the 'Open task' action only together with include_task_link."""
    pipe.configure(include_task_link=link, include_task_link_action=action)
    pipe.hooks.install_rollout("simple-exec")
    pipe.hooks.stop(pipe.hooks.stop_payload("simple"))
    pipe.deliver()
    [body] = pipe.published()
    assert (body.get("click") == TASK_URL, "actions" in body) == (click, actions)
    if not link:
        assert "chatgpt.com" not in pipe.request_bodies()
    if actions:
        assert body["actions"] == [{"action": "view", "label": "Open task", "url": TASK_URL}]


# --- item 11: comma-separated tags; the budget keeps the context -------------------------------


def test_comma_separated_tags_are_split(pipe: Pipeline) -> None:
    """`"tags": "warning, skull"` (as the reference notifier's config files have it) sends two tags.

    Before: the delivery role refused the whole configuration and sent nothing."""
    pipe.configure(tags="warning, skull,")
    _claude_stop(pipe)
    assert pipe.only_message()["tags"] == ["warning", "skull"]


@pytest.mark.parametrize("markdown", [False, True])
def test_long_excerpt_is_cut_so_the_context_arrives(pipe: Pipeline, markdown: bool) -> None:
    """A 12,000-byte answer (4,000 CJK characters) fills the budget: the excerpt is cut on a code point
    with "…", and `project · origin · #id` still ends the message within 3,500 bytes.

    Before: the whole body was cut at 3,500 bytes and the context was lost."""
    pipe.configure(include_message=True, max_message_chars=5000, include_full_path=True, markdown=markdown)
    answer = "完了しました。" * 572
    stop = _claude_stop(pipe, last_assistant_message=answer[:4000])
    text = pipe.only_message()["message"]
    context = f"{stop['cwd']} · {ORIGIN} · #{short_id(stop['session_id'])}"
    sep = "\n\n" if markdown else " · "
    assert text.endswith(sep + context)
    excerpt = text[: -len(sep + context)]
    assert excerpt.endswith("…") and answer.startswith(excerpt[:-1])
    assert 3400 < len(text.encode("utf-8")) <= 3500


# --- item 12: bidi controls never reach the phone ----------------------------------------------


def test_bidi_controls_in_cwd_are_stripped(pipe: Pipeline) -> None:
    """A right-to-left override in the project folder would show "reportexe.txt" for "report‮txt.exe": stripped.

    Before: U+202E (and the other bidi controls) went into the title and the path verbatim."""
    pipe.configure(include_full_path=True)
    controls = "".join(sorted(BIDI_CONTROLS))
    _claude_stop(pipe, cwd=f"/home/dev/{controls}work/report\u202etxt.exe")
    message = pipe.only_message()
    assert message["title"] == "reporttxt.exe"
    assert message["message"].startswith("/home/dev/work/reporttxt.exe · ")
    sent = json.dumps(pipe.published(), ensure_ascii=False)
    assert not set(sent) & BIDI_CONTROLS


def test_bidi_controls_in_a_thread_title_are_stripped(pipe: Pipeline) -> None:
    """A Codex thread title with an isolate and an override (session_index.jsonl) arrives without them."""
    pipe.configure(include_thread_title=True)
    hooks = pipe.hooks
    entry = {"id": "01a22be2-8ff4-7060-90c7-45d2cf0697b5", "thread_name": "Fix \u2067invoice\u2069 \u202egnp.exe"}
    (hooks.codex_home / "session_index.jsonl").write_text(json.dumps(entry) + "\n")
    hooks.install_rollout("simple-exec")
    hooks.stop(hooks.stop_payload("simple"))
    message = pipe.only_message()
    assert message["title"] == "Fix invoice gnp.exe"
    assert not set(json.dumps(pipe.published(), ensure_ascii=False)) & BIDI_CONTROLS

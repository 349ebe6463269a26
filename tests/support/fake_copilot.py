"""A scripted fake Anthropic Messages API for the real GitHub Copilot CLI (BYOK provider ``anthropic``).

Copilot sends only ``POST /v1/messages`` (stream: true, thinking on). Requests are routed:

* ``"main"`` - the root session;
* ``"sub"``  - a subagent started by the ``task`` tool: it has its own system prompt, so the fake
  knows it by :data:`SUBAGENT_MARKER` in its first user message (put it in the ``task`` prompt).

Steps are those of :mod:`support.fake_messages` (``Text``, ``ToolUse``, ``api_error``, ``Stall``,
``MidStreamError``); :func:`shell` and :func:`task` build Copilot's two tool calls that matter.

    with FakeCopilot({"main": [shell("echo hi"), Text("done")]}) as server:
        ...  # COPILOT_PROVIDER_BASE_URL=server.url
"""

from __future__ import annotations

from typing import Any

from support.fake_messages import FakeMessages, MidStreamError, Text, ToolUse, api_error
from support.scripted_server import JSON, HttpError, RecordedRequest, Stall

__all__ = [
    "FakeCopilot",
    "MidStreamError",
    "Stall",
    "Text",
    "ToolUse",
    "api_error",
    "copilot_route",
    "retried_error",
    "shell",
    "task",
]

SUBAGENT_MARKER = "FAKE-SUBAGENT-TASK"


def shell(
    command: str,
    description: str = "Run a command",
    *,
    background: bool = False,
    detach: bool = False,
    shell_id: str | None = None,
    text: str | None = None,
) -> ToolUse:
    """Copilot's ``bash`` tool: ``mode: async`` in the background, ``detach`` to outlive the CLI."""
    args: JSON = {"command": command, "description": description}
    if background or detach:
        args["mode"] = "async"
    if detach:
        args["detach"] = True
    if shell_id is not None:
        args["shellId"] = shell_id
    return ToolUse("bash", args, text)


def task(work: str, *, name: str = "fakesub", background: bool = False, agent_type: str = "task") -> ToolUse:
    """Copilot's ``task`` tool (a subagent); its replies come from the ``sub`` route."""
    args: JSON = {
        "name": name,
        "description": f"Fake {name} task",
        "agent_type": agent_type,
        "prompt": f"{SUBAGENT_MARKER}: {work}",
        "mode": "background" if background else "sync",
    }
    return ToolUse("task", args)


def retried_error(status: int) -> HttpError:
    """An API error with ``retry-after-ms: 1``, for the statuses Copilot retries (5 times).

    Copilot's client obeys the header (measured on 1.0.102): its retries then come ~1 s apart,
    ~7 s for all six attempts, where its own backoff takes ~16 s for a 529 and ~60 s for a 429.
    """
    error = api_error(status)
    return HttpError(error.status, error.body, {**error.headers, "retry-after-ms": "1"})


def first_user_text(body: Any) -> str:
    """The text of the request's first user message (a string or a list of blocks)."""
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages or []:
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict))
    return ""


def copilot_route(req: RecordedRequest) -> str:
    return "sub" if SUBAGENT_MARKER in first_user_text(req.body) else "main"


class FakeCopilot(FakeMessages):
    """Fake Messages API for Copilot; set ``COPILOT_PROVIDER_BASE_URL`` to ``url``."""

    def __init__(self, script: Any = None, **kw: Any) -> None:
        kw.setdefault("fallback", {"*": Text("FAKE-FALLBACK: nothing scripted for this request.")})
        super().__init__(script, **kw)

    def route(self, req: RecordedRequest) -> str:
        return copilot_route(req)

    def served(self, route: str | None = None) -> list[RecordedRequest]:
        """The model requests this fake answered (optionally of one route), proof the CLI ran."""
        return [r for r in self.requests if r.method == "POST" and (route is None or r.route == route)]

"""A scripted fake Anthropic Messages API for the real Claude Code CLI (`claude -p`).

Claude Code 2.1.197 probes `HEAD /` (2.1.332 does not), then sends only `POST
/v1/messages?beta=true` with `stream: true` (2.1.332 retries a stream error that cut off no
finished block with `stream: false`). Requests are routed by their system prompt:

* ``"main"``  - the root conversation;
* ``"sub"``   - a subagent started by the `Agent` tool (its system header has `cc_is_subagent=true`);
* ``"goal"``  - the `/goal` stop-condition evaluator (answer with `GoalVerdict`);
* ``"title"`` - the interactive title generator.

    server = FakeMessages({"main": [bash("echo hi"), Text("done")]}).start()
    ...  # ANTHROPIC_BASE_URL=server.url
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.scripted_server import (
    JSON,
    Fallback,
    HttpError,
    RecordedRequest,
    Script,
    ScriptedServer,
    Stall,
    Step,
    sse,
)

__all__ = [
    "FakeMessages",
    "GoalVerdict",
    "HttpError",
    "MaxTokens",
    "MidStreamError",
    "RecordedRequest",
    "Stall",
    "Text",
    "ToolUse",
    "ToolUses",
    "agent",
    "api_error",
    "bash",
    "claude_route",
    "system_text",
]

GOAL_EVALUATOR_PREFIX = "You are evaluating a stop-condition hook in Claude Code"
TITLE_MARKER = "Generate a concise, sentence-case title"


@dataclass(frozen=True)
class Text(Step):
    """An assistant text reply with stop_reason end_turn."""

    text: str


@dataclass(frozen=True)
class MaxTokens(Step):
    """A text reply cut off by the output limit (stop_reason max_tokens). The CLI asks again a few
    times, then ends the turn with StopFailure ``max_output_tokens``: use it as the route's fallback."""

    text: str = "FAKE-PARTIAL: cut off by the output limit"


@dataclass(frozen=True)
class MidStreamError(Step):
    """A reply that starts streaming text, then gets an SSE ``error`` event instead of its end
    (2.1.197: StopFailure ``unknown``; 2.1.332 retries it up to 4 times, then ``server_error``)."""

    text: str = "FAKE-PARTIAL: streamed before the error"
    error_type: str = "overloaded_error"  # what the real API sends mid-stream ("Overloaded")
    message: str = "Overloaded"


@dataclass(frozen=True)
class ToolUse(Step):
    """An assistant message calling one tool (optionally after some text); stop_reason tool_use."""

    name: str
    input: JSON = field(default_factory=dict)
    text: str | None = None


@dataclass(frozen=True)
class ToolUses(Step):
    """One assistant message calling several tools (optionally after some text), as the model
    asks for parallel calls; stop_reason tool_use."""

    calls: tuple[ToolUse, ...]
    text: str | None = None


@dataclass(frozen=True)
class GoalVerdict(Step):
    """The `/goal` evaluator's answer: met (`ok`), not met, or `impossible`."""

    ok: bool
    reason: str = "fake evaluator verdict"
    impossible: bool = False


def bash(
    command: str, description: str = "Run a command", run_in_background: bool = False, text: str | None = None
) -> ToolUse:
    args: JSON = {"command": command, "description": description}
    if run_in_background:
        args["run_in_background"] = True
    return ToolUse("Bash", args, text)


def agent(
    prompt: str,
    description: str = "Fake sub task",
    subagent_type: str = "general-purpose",
    run_in_background: bool = False,
) -> ToolUse:
    """Start a subagent; script its own replies under the "sub" route.

    ``run_in_background`` is always sent: Claude 2.1.332 runs an Agent call asynchronously unless
    it says ``false`` (2.1.197 treated a missing flag as ``false``)."""
    args: JSON = {
        "description": description,
        "prompt": prompt,
        "subagent_type": subagent_type,
        "run_in_background": run_in_background,
    }
    return ToolUse("Agent", args)


# The error `type`s the real API uses for each status; the CLI maps them to StopFailure.error.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def api_error(status: int, message: str | None = None) -> HttpError:
    """An HTTP error with Anthropic's error JSON.

    The CLI retries 429/5xx/401 `CLAUDE_CODE_MAX_RETRIES` times with its own backoff (about 0.5 s,
    then 1 s); `retry-after`, `retry-after-ms` and `x-should-retry` headers did not change that in
    2.1.197, so script one error per attempt or set the fallback.
    """
    etype = _ERROR_TYPES.get(status, "api_error")
    body = {"type": "error", "error": {"type": etype, "message": message or etype.replace("_", " ").title()}}
    return HttpError(status, body, {"request-id": f"req_fake_{status}"})


def system_text(body: Any) -> str:
    """The request's system prompt as one string (it is sent as a list of text blocks)."""
    system = body.get("system") if isinstance(body, dict) else None
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
    return ""


def claude_route(req: RecordedRequest) -> str:
    system = system_text(req.body)
    if GOAL_EVALUATOR_PREFIX in system:
        return "goal"
    if TITLE_MARKER in system:
        return "title"
    if "cc_is_subagent=true" in system:
        return "sub"
    return "main"


class FakeMessages(ScriptedServer):
    """Fake Messages API; set `ANTHROPIC_BASE_URL` to `url`."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        fallback: Fallback = None,
        router: Callable[[RecordedRequest], str] | None = None,
    ) -> None:
        if fallback is None:
            fallback = {
                "goal": GoalVerdict(True, "fallback: condition met"),
                "title": Text('{"title": "Fake session"}'),
                "*": Text("FAKE-FALLBACK: nothing scripted for this request."),
            }
        super().__init__(script, fallback=fallback, router=router)

    def route(self, req: RecordedRequest) -> str:
        return claude_route(req)

    def answer_unrouted(self, h: BaseHTTPRequestHandler, req: RecordedRequest) -> bool:
        if req.method == "POST" and req.path.split("?")[0] == "/v1/messages":
            return False
        # HEAD / is the CLI's connectivity probe; anything else is unexpected but harmless.
        h.send_response(200 if req.path == "/" else 404)
        h.send_header("Content-Length", "0")
        h.end_headers()
        return True

    def stream_headers(self, req: RecordedRequest) -> dict[str, str]:
        # Claude 2.1.332 answers a stream error without an Anthropic request-id (a proxy, it
        # assumes) with a non-streaming retry instead of retrying the stream.
        return {"request-id": f"req_fake_{self.next_id('r')[-12:]}"}

    def events(self, req: RecordedRequest, step: Step) -> Iterable[bytes]:
        if isinstance(step, GoalVerdict):
            verdict: JSON = {"ok": step.ok, "reason": step.reason}
            if step.impossible:
                verdict["impossible"] = True
            step = Text(json.dumps(verdict))
        blocks: list[JSON] = []
        if isinstance(step, Text):
            blocks.append({"type": "text", "text": step.text})
            stop_reason = "end_turn"
        elif isinstance(step, MaxTokens):
            blocks.append({"type": "text", "text": step.text})
            stop_reason = "max_tokens"
        elif isinstance(step, MidStreamError):
            yield from self._mid_stream_error(req, step)
            return
        elif isinstance(step, (ToolUse, ToolUses)):
            if step.text:
                blocks.append({"type": "text", "text": step.text})
            for call in step.calls if isinstance(step, ToolUses) else (step,):
                blocks.append({"type": "tool_use", "id": self.next_id("toolu"), "name": call.name, "input": call.input})
            stop_reason = "tool_use"
        else:
            raise TypeError(f"FakeMessages cannot stream {step!r}")
        yield self._message_start(req)
        for i, block in enumerate(blocks):
            start: JSON
            delta: JSON
            if block["type"] == "text":
                start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
            else:
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            yield sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": start})
            yield sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
            yield sse("content_block_stop", {"type": "content_block_stop", "index": i})
        yield sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 10},
            },
        )
        yield sse("message_stop", {"type": "message_stop"})

    def _message_start(self, req: RecordedRequest) -> bytes:
        model = (req.body or {}).get("model", "claude-fake")
        usage = {
            "input_tokens": 100,
            "output_tokens": 1,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        return sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": self.next_id("msg"),
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        )

    def _mid_stream_error(self, req: RecordedRequest, step: MidStreamError) -> Iterable[bytes]:
        yield self._message_start(req)
        yield sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
        yield sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": step.text}},
        )
        # A finished block, then the error (no message_delta): 2.1.332 finalizes the partial reply
        # and reports the cut; with no block finished it would retry without streaming instead.
        yield sse("content_block_stop", {"type": "content_block_stop", "index": 0})
        error = {"type": step.error_type, "message": step.message}
        yield sse("error", {"type": "error", "error": error})

"""A scripted fake OpenAI Responses API (`POST /v1/responses`, SSE) for the real Codex CLI.

Built on `scripted_server` (the generic recording, scripted server that `fake_messages` reuses);
this module renders steps the way Codex 0.171 parses them.

    server = FakeResponses({"root": [exec_command("echo hi"), Text("done")]}).start()
    ...  # point CODEX_HOME/config.toml at server.url + "/v1"
    server.stop()
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from support.scripted_server import (
    JSON,
    Fallback,
    HttpError,
    RecordedRequest,
    Script,
    ScriptedServer,
    Step,
    sse,
)

__all__ = [
    "FakeResponses",
    "FunctionCall",
    "Text",
    "child_order_router",
    "codex_route",
    "create_goal",
    "exec_command",
    "http_500",
    "spawn_agent",
    "spawned_agent_ids",
    "turn_metadata",
    "update_goal",
    "wait_agent",
]


# ==== Codex / Responses API ===================================================================


@dataclass(frozen=True)
class Text(Step):
    """An assistant message; ends the turn when nothing else is pending."""

    text: str


@dataclass(frozen=True)
class FunctionCall(Step):
    """A tool call. `arguments` may be a function of the request (to echo ids back)."""

    name: str
    arguments: JSON | Callable[[RecordedRequest], JSON] = field(default_factory=dict)
    namespace: str | None = None  # multi_agent_v1 tools are namespaced


def exec_command(cmd: str, **extra: Any) -> FunctionCall:
    """Run a shell command through Codex's unified exec tool."""
    return FunctionCall("exec_command", {"cmd": cmd, **extra})


def spawn_agent(message: str, **extra: Any) -> FunctionCall:
    """Spawn a child thread (multi_agent v1); Codex answers with {agent_id, nickname}."""
    return FunctionCall("spawn_agent", {"message": message, **extra}, namespace="multi_agent_v1")


def wait_agent(targets: list[str] | None = None, timeout_ms: int = 30000) -> FunctionCall:
    """Wait for children; with `targets=None`, every agent_id spawned so far in this thread."""

    def args(req: RecordedRequest) -> JSON:
        return {"targets": targets if targets is not None else spawned_agent_ids(req), "timeout_ms": timeout_ms}

    return FunctionCall("wait_agent", args, namespace="multi_agent_v1")


def create_goal(objective: str, token_budget: int | None = None) -> FunctionCall:
    args: JSON = {"objective": objective}
    if token_budget is not None:
        args["token_budget"] = token_budget
    return FunctionCall("create_goal", args)


def update_goal(status: str = "complete") -> FunctionCall:
    return FunctionCall("update_goal", {"status": status})


def http_500(message: str = "fake upstream failure") -> HttpError:
    return HttpError(500, {"error": {"message": message, "type": "server_error"}})


def spawned_agent_ids(req: RecordedRequest) -> list[str]:
    """agent_ids returned by spawn_agent calls, read from the function_call_output items."""
    ids: list[str] = []
    for item in (req.body or {}).get("input", []):
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            try:
                out = json.loads(item.get("output") or "")
            except (TypeError, ValueError):
                continue
            if isinstance(out, dict) and isinstance(out.get("agent_id"), str):
                ids.append(out["agent_id"])
    return ids


def turn_metadata(req: RecordedRequest) -> JSON:
    """Codex's `x-codex-turn-metadata` header (thread_id, turn_id, thread_source, ...)."""
    try:
        meta = json.loads(req.headers.get("x-codex-turn-metadata", "{}"))
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def codex_route(req: RecordedRequest) -> str:
    """'child' for a spawned subagent's request (Codex tags those), else 'root'."""
    return "child" if "x-openai-subagent" in req.headers or "x-codex-parent-thread-id" in req.headers else "root"


def child_order_router() -> Callable[[RecordedRequest], str]:
    """A router for several children: 'root', then 'child1', 'child2'... by each child thread's
    first request (the `thread-id` header), so each child can have its own script."""
    order: dict[str, str] = {}
    lock = threading.Lock()

    def route(req: RecordedRequest) -> str:
        if codex_route(req) == "root":
            return "root"
        thread = req.headers.get("thread-id") or str(turn_metadata(req).get("thread_id"))
        with lock:
            return order.setdefault(thread, f"child{len(order) + 1}")

    return route


class FakeResponses(ScriptedServer):
    """Fake Responses API; routes are 'root' and 'child' unless a custom `router` is given."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        fallback: Fallback = Text("FAKE-FALLBACK: nothing scripted for this request."),
        router: Callable[[RecordedRequest], str] | None = None,
    ) -> None:
        super().__init__(script, fallback=fallback, router=router)

    @property
    def base_url(self) -> str:
        """What goes in config.toml's `base_url` (Codex appends /responses)."""
        return self.url + "/v1"

    def route(self, req: RecordedRequest) -> str:
        return codex_route(req)

    def events(self, req: RecordedRequest, step: Step) -> Iterable[bytes]:
        resp_id = self.next_id("resp")
        yield sse("response.created", {"type": "response.created", "response": {"id": resp_id}})
        if isinstance(step, Text):
            msg_id = self.next_id("msg")
            added = {"type": "message", "role": "assistant", "id": msg_id, "content": []}
            yield sse(
                "response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": added}
            )
            yield sse(
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": msg_id,
                    "output_index": 0,
                    "content_index": 0,
                    "delta": step.text,
                },
            )
            done = {
                **added,
                "status": "completed",
                "content": [{"type": "output_text", "text": step.text, "annotations": []}],
            }
            yield sse(
                "response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": done}
            )
        elif isinstance(step, FunctionCall):
            args = step.arguments(req) if callable(step.arguments) else step.arguments
            item: JSON = {
                "type": "function_call",
                "status": "completed",
                "id": self.next_id("fc"),
                "call_id": self.next_id("call"),
                "name": step.name,
                "arguments": json.dumps(args),
            }
            if step.namespace:
                item["namespace"] = step.namespace
            yield sse(
                "response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}
            )
            yield sse(
                "response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}
            )
        else:
            raise TypeError(f"FakeResponses cannot stream {step!r}")
        usage = {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 110,
        }
        yield sse("response.completed", {"type": "response.completed", "response": {"id": resp_id, "usage": usage}})

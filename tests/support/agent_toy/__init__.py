"""A test-only third agent, "toy": the proof that a new agent is one folder plus one registration line.

``tests/test_agent_toy.py`` places this folder at ``donebell/workers/agents/toy/`` in a copy of the
package whose only other difference is the toy's line in ``workers/agents/registry.py``, and drives
a hook -> gate -> delivery round trip through the real roles. Its ``agent.py`` names the hook
(``hook.py``) and the gate (``gate.py``); every other capability is the agent object's default.
The toy's "agent" writes a JSONL log per session; a line ``{"turn": ..., "status": "done"}`` is
its evidence that a turn is over.
"""

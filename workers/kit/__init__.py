"""The kit: what agents and roles share, below both (docs/design.md, "Layers").

A hook run's input and context (:mod:`.hook_context`), the gate's context, verdict,
ladder and probe schedule, the JSONL tail and its cursor (:mod:`.jsonl_tail`), the thread view,
the needs-you record and its answered-evidence, a role pass's result, and what the agents'
install and doctor wiring is built from (:mod:`.install`). An agent folder imports only this
package and ``shared/``; a role imports it, ``shared/`` and agents only through
``workers/agents/registry.py`` and ``protocols.py``. This package imports ``shared/`` only and
names no agent (``tests/test_layering.py``). Importing it loads none of its parts: the hook path
pays for the parts it uses.
"""

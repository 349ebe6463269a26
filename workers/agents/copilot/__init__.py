"""GitHub Copilot CLI: its hooks, its session log (``events.jsonl``), its gate, scanner and wake adapter."""

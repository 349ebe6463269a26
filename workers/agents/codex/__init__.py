"""OpenAI Codex: hook payloads, rollouts and their cursors, the thread database, gate evidence,
thread titles, the app-server wake adapter. Importing this package loads nothing else."""

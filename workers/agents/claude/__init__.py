"""Claude Code: hook payloads, transcripts and their cursors, session epochs, gate evidence,
titles, session-record retention. Importing this package loads nothing else."""

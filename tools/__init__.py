"""Developer tools: the generators of checked-in files. Never imported by donebell at run time."""

"""Can the state directory be used at all? One answer for every command (issue 26 item 6b).

A ``DONEBELL_STATE_DIR`` naming a regular file, or a path under a file or in a filesystem where
nothing can be created, ended ``status``, ``test`` and ``worker`` in tracebacks while ``run``
and ``hook`` said it in one line, and ``doctor`` called it ok. :func:`problem` is that one line;
the dispatcher (:mod:`donebell.supervisor.cli`) prints it for every command that needs the
directory, and doctor's ``state_dir`` check fails with it.
"""

from __future__ import annotations

import os
import stat


def problem(root: str) -> str | None:
    """Why ``root`` cannot be the state directory, or None when it is one or could be created.

    An existing path must be a plain directory (not a symlink, not a file). A missing one needs
    its nearest existing ancestor to be a directory in which a folder can really be made: that
    is tried with a probe folder, removed at once (permission bits alone say nothing for root,
    and nothing can be created under ``/proc`` whatever they say).
    """
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return _uncreatable(root)
    except NotADirectoryError:  # a parent is a file
        return _uncreatable(root)
    except OSError as exc:
        return f"{root}: {exc.strerror or exc}"
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        return f"{root} is not a plain directory (symlink or file); refusing to use it"
    return None


def _uncreatable(root: str) -> str | None:
    ancestor = os.path.dirname(root)
    while True:
        try:
            st = os.stat(ancestor)
            break
        except OSError:
            if os.path.dirname(ancestor) == ancestor:
                return f"{root} cannot be created (no existing parent)"
            ancestor = os.path.dirname(ancestor)
    if not stat.S_ISDIR(st.st_mode):
        return f"{root} cannot be created: {ancestor} is not a directory"
    probe = os.path.join(ancestor, f".donebell-probe-{os.getpid()}")
    try:
        os.mkdir(probe, 0o700)
    except FileExistsError:
        return None  # a probe of this pid already there: creating works
    except OSError as exc:
        return f"{root} cannot be created in {ancestor} ({exc.strerror or exc})"
    try:
        os.rmdir(probe)
    except OSError:
        pass  # the creation test passed; a leftover empty folder is all this can leave
    return None

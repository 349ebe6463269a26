"""The physical memory a group of processes occupies: each resident page frame counted once.

RSS sums count a page shared by N processes N times; PSS sums divide it among *all* its
sharers, processes outside the group included (another Python program on the machine shares
libpython's pages and takes part of their cost). The distinct page frames the group maps are
what it occupies as if it ran alone: ``/proc/<pid>/pagemap`` gives each resident virtual page's
frame number. Linux only, and only with CAP_SYS_ADMIN (root): otherwise the kernel reports
every frame as 0 and :func:`distinct_frames_mib` returns None.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable

_PRESENT = 1 << 63
_PFN_MASK = (1 << 55) - 1


def distinct_frames(pids: Iterable[int]) -> set[int]:
    """The page frame numbers resident in any of ``pids`` (an empty set when they are hidden)."""
    frames: set[int] = set()
    page = os.sysconf("SC_PAGE_SIZE")
    for pid in pids:
        with open(f"/proc/{pid}/maps", encoding="ascii") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
            for line in maps:
                low, high = (int(x, 16) for x in line.split()[0].split("-"))
                if line.rstrip().endswith("[vsyscall]"):
                    continue  # outside the range pagemap can seek to
                pagemap.seek(low // page * 8)
                for (entry,) in struct.iter_unpack("Q", pagemap.read((high - low) // page * 8)):
                    if entry & _PRESENT and entry & _PFN_MASK:
                        frames.add(entry & _PFN_MASK)
    return frames


def distinct_frames_mib(pids: Iterable[int]) -> float | None:
    """MiB of distinct resident page frames of ``pids``; None where frame numbers are hidden."""
    try:
        frames = distinct_frames(pids)
    except OSError:
        return None
    return len(frames) * os.sysconf("SC_PAGE_SIZE") / (1 << 20) if frames else None

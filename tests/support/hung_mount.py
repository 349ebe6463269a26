"""A FUSE mount that hangs: the slow or dead remote root (NFS, sshfs) the remote scanner must survive."""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import struct
import sys
import threading
from pathlib import Path
from types import TracebackType

import pytest


class HungMount:
    """A FUSE mount at ``path`` that stops answering after INIT (skips the test if it cannot mount)."""

    def __init__(self, path: Path, *, take_requests: bool) -> None:
        self.path, self.take_requests = path, take_requests
        self.fd = -1
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.libc = ctypes.CDLL(None, use_errno=True)

    def __enter__(self) -> HungMount:
        if not sys.platform.startswith("linux") or os.geteuid() != 0:
            pytest.skip("a FUSE mount needs Linux and root")
        self.path.mkdir(parents=True, exist_ok=True)
        try:
            self.fd = os.open("/dev/fuse", os.O_RDWR)
        except OSError as exc:
            pytest.skip(f"/dev/fuse unavailable: {exc}")
        opts = f"fd={self.fd},rootmode=40000,user_id=0,group_id=0".encode()
        if self.libc.mount(b"donebell-hang", str(self.path).encode(), b"fuse", ctypes.c_ulong(2 | 4), opts) != 0:
            os.close(self.fd)
            pytest.skip(f"cannot mount FUSE here: {os.strerror(ctypes.get_errno())}")
        request = os.read(self.fd, 1 << 20)  # FUSE_INIT
        _, opcode, unique = struct.unpack_from("<IIQ", request)
        assert opcode == 26
        minor = struct.unpack_from("<II", request, 40)[1]
        init_out = struct.pack("<IIIIHHIIHHII", 7, min(minor, 31), 0, 0, 0, 0, 4096, 0, 0, 0, 0, 0) + bytes(24)
        os.write(self.fd, struct.pack("<IiQ", 16 + len(init_out), 0, unique) + init_out)
        if self.take_requests:
            self.thread = threading.Thread(target=self._swallow, daemon=True)
            self.thread.start()
        return self

    def _swallow(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        while not self.stop.is_set():
            if poller.poll(100):
                with contextlib.suppress(OSError):
                    os.read(self.fd, 1 << 20)  # taken, never answered

    def abort(self) -> None:
        """Unmount and drop the connection: every waiting request fails with ENOTCONN."""
        if self.fd < 0:
            return
        self.stop.set()
        if self.thread is not None:
            self.thread.join(5)
        self.libc.umount2(str(self.path).encode(), 2)  # MNT_DETACH
        os.close(self.fd)
        self.fd = -1

    def __exit__(self, *exc: tuple[type[BaseException] | None, BaseException | None, TracebackType | None]) -> None:
        self.abort()

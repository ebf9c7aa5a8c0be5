"""The two system calls that make a replace without a window: an exchange rename, and signals held back.

- :func:`swap` exchanges two paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``, macOS
  ``renamex_np(RENAME_SWAP)``): at every instant each name holds one of the two things, whatever kills the process.
  Where the system or the file system has none, it raises :class:`OSError` with an errno in :data:`UNSUPPORTED`, and
  the caller falls back.
- :func:`held`: SIGINT, SIGTERM and SIGHUP held back (delivered when the block ends), so that Ctrl-C or a ``kill``
  lands before or after a few steps that belong together, never between them. SIGKILL cannot be held.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

UNSUPPORTED = {errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP}
"""The errors of :func:`swap` that mean: no exchange here (the system, or this file system); fall back."""

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2   # linux/fs.h
_RENAME_SWAP = 2       # macOS stdio.h, for renamex_np
_SYS_RENAMEAT2 = {"x86_64": 316, "aarch64": 276, "arm64": 276, "i386": 353, "i686": 353, "armv7l": 382,
                  "ppc64le": 357, "ppc64": 357, "s390x": 347, "riscv64": 276, "loongarch64": 276}
"""The system call number of renameat2 where the C library has no wrapper (glibc before 2.28, musl)."""
_call = None


def swap(a: str | os.PathLike, b: str | os.PathLike) -> None:
    """Exchange ``a`` and ``b`` (both exist; a folder and a file or a link may be exchanged too) in one step.
    :class:`OSError` on failure; its errno is in :data:`UNSUPPORTED` where the platform cannot."""
    global _call
    if _call is None:
        _call = _exchange_call()
    if _call(os.fsencode(a), os.fsencode(b)) != 0:
        code = ctypes.get_errno() if _call is not _none else errno.ENOSYS
        raise OSError(code, os.strerror(code), os.fspath(a), None, os.fspath(b))


def _exchange_call(libc=None, platform: str = sys.platform, machine: str | None = None):
    """The platform's exchange rename as a function of two byte paths returning 0 (else -1, errno set): the C
    library's ``renameat2`` or ``renamex_np``, else Linux's raw system call."""
    try:
        libc = libc or ctypes.CDLL(None, use_errno=True)
    except (OSError, TypeError):   # no C library to open by None (Windows)
        return _none
    if platform.startswith("linux"):
        fn = getattr(libc, "renameat2", None)
        if fn is not None:
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            return lambda a, b: fn(_AT_FDCWD, a, _AT_FDCWD, b, _RENAME_EXCHANGE)
        number, raw = _SYS_RENAMEAT2.get(machine or os.uname().machine), getattr(libc, "syscall", None)
        if number is None or raw is None:
            return _none
        raw.restype = ctypes.c_long
        return lambda a, b: raw(ctypes.c_long(number), ctypes.c_int(_AT_FDCWD), ctypes.c_char_p(a),
                                ctypes.c_int(_AT_FDCWD), ctypes.c_char_p(b), ctypes.c_uint(_RENAME_EXCHANGE))
    if platform == "darwin":
        fn = getattr(libc, "renamex_np", None)
        if fn is not None:
            fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]
            return lambda a, b: fn(a, b, _RENAME_SWAP)
    return _none


def _none(a: bytes, b: bytes) -> int:
    """No exchange on this platform."""
    return -1


HELD = tuple(s for s in (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP")) if s is not None)


@contextmanager
def held() -> Iterator[None]:
    """Hold back :data:`HELD` while the block runs; a signal that came meanwhile is delivered as the block ends (Ctrl-C
    then raises :class:`KeyboardInterrupt` there, after the block's steps). In the main thread each is caught by a
    handler that only notes it, whichever thread of the process the system handed it to (torch and others start
    threads whose masks this thread's cannot cover), and raised again with the handler it had; the system's mask of
    this thread holds them too, and is all there is off the main thread. No-op where the system has neither."""
    mask = getattr(signal, "pthread_sigmask", None)
    came: list[int] = []
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in HELD:
            try:
                previous[signum] = signal.signal(signum, lambda number, frame: came.append(number))
            except (ValueError, OSError):
                pass
    before = mask(signal.SIG_BLOCK, HELD) if mask is not None else None
    try:
        yield
    finally:
        if mask is not None:
            mask(signal.SIG_SETMASK, before)   # a signal pending in this thread reaches the noting handler now
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        for signum in dict.fromkeys(came):
            signal.raise_signal(signum)   # as it would have come: the handler it had, or the system's default

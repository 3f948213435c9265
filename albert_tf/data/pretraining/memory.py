"""Give the C heap's free pages back to the operating system between chunks, so peak memory does not creep up.

Why: every chunk allocates and frees some hundred thousand objects (token-id lists, serialized records, the pickled
result of a worker, the unpickled copy in the main process). glibc keeps freed memory inside its heaps and returns
it only from a heap's top, so a few long-lived allocations (the shuffle buffer's survivors, the next chunk's lines)
can keep freed pages resident. ``malloc_trim(0)`` returns every whole free page of every heap, the middle of a heap
included (glibc >= 2.8 uses ``madvise``), in a few milliseconds; once per chunk it is well under 1% of the chunk's
work. It does not stop peak memory growing with the corpus where that growth comes from the official
once-per-document short-length draw (see ``chunks.PackedRecords``); it keeps the heap itself from adding to it.

Where the C library is not glibc (macOS, musl, Windows) this is a no-op: those allocators behave differently and
were not measured here.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

__all__ = ["release_free_memory"]


@functools.lru_cache(maxsize=1)
def _malloc_trim():
    """glibc's ``malloc_trim`` or None (looked up once per process)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_free_memory() -> bool:
    """Return the heap's free pages to the OS; True where the C library supports it (glibc), False elsewhere."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True

"""TFRecord files read and checked in Python, never trusting a length field (no TensorFlow runtime needed).

Framing of every record: ``uint64 length``, ``uint32 masked crc32c(length)``, ``data``, ``uint32 masked
crc32c(data)``. A file that is not a TFRecord file (a JSON sidecar, a text file, random bytes) fails the length
checksum on its first 12 bytes; a length that runs past the end of the file (a file cut short) is reported
before anything is read; a flipped bit fails a checksum. Every error is one line: ``file: record N: what``.
TensorFlow's own reader would instead allocate whatever the length field says (a segfault on a JSON file).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from albert_tf import files as _fs

_MASK_DELTA = 0xA282EAD8
_HEADER = 12
_FOOTER = 4


class TFRecordError(ValueError):
    """A file that is not a well-formed TFRecord file; the message names the file, record and byte offset."""


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC-32C of ``data``."""
    import google_crc32c

    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def file_size(path: str) -> int:

    return int(_fs.size(path))


def iter_records(path: str, limit: int | None = None, check_data_crc: bool = True) -> Iterator[bytes]:
    """Yield the records of ``path`` (at most ``limit``), checking the framing and checksums of each one."""

    size = file_size(path)
    offset = index = 0
    with _fs.open_file(path, "rb") as f:
        while limit is None or index < limit:
            header = f.read(_HEADER)
            if not header:
                return
            length = _check_header(path, index, offset, header, size)
            data = f.read(length)
            footer = f.read(_FOOTER)
            if check_data_crc and struct.unpack("<I", footer)[0] != masked_crc32c(data):
                raise TFRecordError(f"{path}: record {index}: data checksum mismatch at byte {offset} (corrupted file)")
            yield data
            offset += _HEADER + length + _FOOTER
            index += 1


def count_records(path: str) -> int:
    """Number of records of ``path``, checking every record's framing (length checksums; data is skipped)."""

    size = file_size(path)
    offset = index = 0
    with _fs.open_file(path, "rb") as f:
        while offset < size:
            f.seek(offset)
            length = _check_header(path, index, offset, f.read(_HEADER), size)
            offset += _HEADER + length + _FOOTER
            index += 1
    return index


def _check_header(path: str, index: int, offset: int, header: bytes, size: int) -> int:
    if len(header) < _HEADER:
        raise TFRecordError(f"{path}: record {index}: truncated header at byte {offset} (file cut short?)")
    length, crc = struct.unpack("<QI", header)
    if crc != masked_crc32c(header[:8]):
        what = "not a TFRecord file" if index == 0 else "corrupted record header"
        raise TFRecordError(f"{path}: record {index}: {what} (length checksum mismatch at byte {offset})")
    if offset + _HEADER + length + _FOOTER > size:
        raise TFRecordError(
            f"{path}: record {index}: truncated: {length} data bytes at byte {offset} run past the end of the file "
            f"({size} bytes; the file was cut short)"
        )
    return length

"""Reading what an operator or a store hands the tool, each read with a bound the format allows.

A file is read whole only up to a size its format never reaches, line by line only up to a length no
line of it reaches, and a compressed file is decompressed as a stream, a line at a time: ``/dev/zero``
given by mistake, a gzip bomb planted in a snapshot folder, or a field of fifty million characters is
refused by name, with the bound, at once and in bounded memory, instead of reading until memory runs out.
"""

from __future__ import annotations

import gzip
import io
import itertools
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, AnyStr

from offset_restore.errors import BadInputError

__all__ = ["gzip_lines", "lines_of", "read_bounded", "read_upto"]

CHUNK = 1024 * 1024
"""What one read asks of a file: a read of the whole bound at once would allocate the bound whatever the file holds."""


def read_bounded(path: str | Path, *, limit: int, what: str, kind: str) -> bytes:
    """The whole of the file at ``path``, refused past ``limit`` bytes. ``what`` names it as the operator gave
    it (``--command-config``, ``ssl.keystore.location``) and ``kind`` says what it should be."""
    try:
        with open(path, "rb") as handle:
            data = read_upto(handle, limit + 1)
    except OSError as error:
        raise BadInputError(f"{what} {path}: {error.strerror or error}") from None
    if len(data) > limit:
        raise BadInputError(f"{what} {path}: larger than {limit:,} bytes: not {kind}")
    return data


def read_upto(handle: IO[bytes], size: int) -> bytes:
    """Up to ``size`` bytes of ``handle``, read a chunk at a time: memory grows with what the file holds."""
    chunks: list[bytes] = []
    left = size
    while left > 0 and (chunk := handle.read(min(CHUNK, left))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def lines_of(handle: IO[str], *, limit: int, what: str) -> Iterator[str]:
    """The lines of a text file, each refused past ``limit`` characters (a line is read no further)."""
    for number in itertools.count(1):
        line = handle.readline(limit + 1)
        if not line:
            return
        if _past(line, limit, "\n"):
            raise BadInputError(f"{what} line {number} is longer than {limit:,} characters")
        yield line


def gzip_lines(data: bytes, *, limit: int, count: int, what: str) -> Iterator[bytes]:
    """The lines of gzip ``data``, decompressed as they are read: each refused past ``limit`` bytes, and the
    whole past ``count`` lines (what the file's manifest says it holds), so a small file that expands to
    gigabytes is refused after reading no more than a line past what it may hold."""
    stream = gzip.GzipFile(fileobj=io.BytesIO(data))
    number = 0
    try:
        while line := stream.readline(limit + 1):
            number += 1
            if _past(line, limit, b"\n"):
                raise BadInputError(f"{what} line {number} is longer than {limit:,} bytes")
            if number > count:
                raise BadInputError(f"{what} holds more than the {count:,} lines its manifest says")
            yield line
    except (OSError, EOFError, zlib.error) as error:
        raise BadInputError(f"{what} is not gzip: {error}") from None


def _past(line: AnyStr, limit: int, newline: AnyStr) -> bool:
    """Whether a line read ``readline(limit + 1)`` runs past ``limit``: its line break may be the one more."""
    return len(line) > limit and not (len(line) == limit + 1 and line.endswith(newline))

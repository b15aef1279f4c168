"""Read a file the candidate left, refusing what is not a plain file of a sane size.

Every built-in task's survival check (``fresh.py``, protected) reads the candidate's output
through this file (:func:`read_candidate_file`, or :func:`read_listing` for a JSON object
holding one list): a symbolic link, a FIFO, a device, a folder or a file larger than the
check allows is refused with a message saying which, never followed, waited on or read whole.
"""

from __future__ import annotations

import errno
import json
import os
import stat


class Refused(Exception):
    """The file cannot be judged; the message says why."""


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def read_candidate_file(name: str, limit: int) -> bytes:
    """The bytes of the regular file ``name`` (relative to the working directory), at most
    ``limit`` of them.

    Opened without following a link (``O_NOFOLLOW``: a link is refused, not read through) and
    without blocking (``O_NONBLOCK``: a FIFO is seen for what it is, not waited on); its kind
    and size are checked on the open descriptor, and never more than ``limit + 1`` bytes are
    read (a file that grows while read is refused too).

    Raises:
        Refused: Missing, a link, not a regular file, or larger than ``limit`` bytes.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
    if os.path.islink(name):
        raise Refused(f"{name} is a symbolic link; the check reads only a regular file")
    try:
        fd = os.open(name, flags)
    except FileNotFoundError:
        raise Refused(f"{name} is missing") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(f"{name} is a symbolic link; the check reads only a regular file"
                          ) from None
        raise Refused(f"cannot open {name}: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        for test, kind in _KINDS:
            if test(mode):
                raise Refused(f"{name} is {kind}, not a regular file")
        if not stat.S_ISREG(mode):
            raise Refused(f"{name} is not a regular file")
        size = os.fstat(fd).st_size
        if size > limit:
            raise Refused(f"{name} holds {size} bytes; the check reads at most {limit}")
        chunks, got = [], 0
        while got <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:
            raise Refused(f"{name} holds more than {limit} bytes; the check reads at most that")
        return b"".join(chunks)
    except OSError as exc:
        raise Refused(f"cannot read {name}: {exc.strerror}") from None
    finally:
        os.close(fd)


def _no_constant(token: str) -> float:
    raise ValueError(f"{token} is not a finite number")


def read_listing(name: str, key: str, limit: int) -> tuple[dict, list, bytes]:
    """The JSON object in the candidate's file ``name`` (read as :func:`read_candidate_file`
    reads it), the list it holds under ``key``, and the file's bytes.

    Raises:
        Refused: As :func:`read_candidate_file`; or not UTF-8 JSON (``NaN`` and ``Infinity``
            included), not an object, or no list under ``key``.
    """
    raw = read_candidate_file(name, limit)
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Refused(f"{name} is not readable JSON ({str(exc)[:100]}); only finite "
                      "numbers") from None
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        raise Refused(f"{name} must be an object with a list '{key}'")
    return data, data[key], raw

"""The child process that runs the candidate's ``lasso_path`` for ``evaluate.py`` (protected).

``python3 worker.py SOLVER`` loads SOLVER by path, says ``{"ready": true}`` (or why it could not
load it) and then answers one request after another on its standard input and output, a JSON
line plus raw little-endian float64 bytes each way:

    request:  {"n": n, "p": p, "k": K}  then X (n*p, row-major), y (n), lambdas (K)
    answer:   {"ok": true, "shape": [p, K]}  then W (p*K, row-major)
              {"ok": false, "error": "..."}  when the call raised or returned something unusable

The evaluator times each request from outside with this process's CPU clock and checks every
answer itself, so nothing this process says about time or quality is trusted.

``python3 worker.py --count SOLVER``, run by the evaluator under Valgrind's callgrind with
instrumentation off at start (``--instr-atstart=no``), counts instructions instead: it turns
instrumentation on once the solver is loaded and, around each call, zeroes callgrind's counters
and dumps them (Valgrind client requests, issued through a few bytes of machine code), so each
dump holds the instructions of one call of the solver. Callgrind keeps its counters in this
process: a hostile solver could issue the same requests, or write callgrind's memory, so the
count is a measurement of a cooperating solver, not a guarantee (see the task's README). Before the
candidate is imported the protocol moves to private descriptors and file descriptor 1 points at
standard error: a ``print`` in the solver cannot reach the evaluator.
"""

from __future__ import annotations

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import importlib.util  # noqa: E402
import json  # noqa: E402
import traceback  # noqa: E402

import numpy as np  # noqa: E402


class _Callgrind:
    """Callgrind's client requests (x86-64 only): ``start`` instrumentation, ``zero`` and
    ``dump`` its counters. Outside Valgrind each request is a no-op returning 0."""

    BASE = (ord("C") << 24) | (ord("T") << 16)
    DUMP, ZERO, START = BASE, BASE + 1, BASE + 4
    RUNNING_ON_VALGRIND = 0x1001
    # mov rax, rdi; xor edx, edx; the special preamble (rol rdi by 3, 13, 61, 51: rdi
    # unchanged); xchg rbx, rbx (the request: args at rax, default 0 in rdx, result in rdx);
    # mov rax, rdx; ret
    CODE = bytes.fromhex("4889f831d248c1c70348c1c70d48c1c73d48c1c7334887db4889d0c3")

    def __init__(self) -> None:
        import ctypes
        import mmap
        import platform

        if platform.machine() not in ("x86_64", "AMD64"):
            raise RuntimeError(f"instruction counts need x86-64, not {platform.machine()}")
        self._page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE
                               | mmap.PROT_EXEC)
        self._page.write(self.CODE)
        address = ctypes.addressof(ctypes.c_char.from_buffer(self._page))
        self._args = (ctypes.c_long * 6)()
        self._fn = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_void_p)(address)
        self._ctypes = ctypes
        if not self.request(self.RUNNING_ON_VALGRIND):
            raise RuntimeError("--count needs the worker to run under valgrind --tool=callgrind")

    def request(self, code: int) -> int:
        self._args[0] = code
        return int(self._fn(self._ctypes.addressof(self._args)))


def _tail(limit: int = 1500) -> str:
    text = traceback.format_exc()
    return text if len(text) <= limit else "..." + text[-limit:]


def main() -> int:
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    count = sys.argv[1] == "--count"
    path = sys.argv[-1]
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.append(folder)  # helper modules beside the solver; never ahead of the stdlib
    try:
        spec = importlib.util.spec_from_file_location("solver", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules["solver"] = module
        spec.loader.exec_module(module)
        solve = module.lasso_path
        if not callable(solve):
            raise TypeError("solver.lasso_path is not callable")
    except BaseException:  # noqa: BLE001  (SystemExit included: report, never vanish)
        _send(proto_out, {"ready": False, "error": _tail()})
        return 0
    counter = None
    if count:
        try:
            counter = _Callgrind()
        except Exception:  # noqa: BLE001
            _send(proto_out, {"ready": False, "error": _tail()})
            return 0
        counter.request(counter.START)
    _send(proto_out, {"ready": True})
    while True:
        line = _readline(proto_in)
        if not line:
            return 0
        head = json.loads(line)
        n, p, k = int(head["n"]), int(head["p"]), int(head["k"])
        X = _read_array(proto_in, n * p).reshape(n, p)
        y = _read_array(proto_in, n)
        lambdas = _read_array(proto_in, k)
        if counter is not None:
            counter.request(counter.ZERO)
        try:
            W = np.array(solve(X, y, lambdas), dtype=np.float64, copy=True, order="C")
        except BaseException:  # noqa: BLE001
            _send(proto_out, {"ok": False, "error": _tail()})
            continue
        finally:
            if counter is not None:
                counter.request(counter.DUMP)
        _send(proto_out, {"ok": True, "shape": list(W.shape)}, W.tobytes())


def _send(out, head: dict, payload: bytes = b"") -> None:
    out.write(json.dumps(head).encode() + b"\n" + payload)


def _readline(src) -> bytes:
    chunks = []
    while True:
        byte = src.read(1)
        if not byte or byte == b"\n":
            return b"".join(chunks)
        chunks.append(byte)


def _read_array(src, count: int) -> np.ndarray:
    buf = bytearray(count * 8)
    view = memoryview(buf)
    got = 0
    while got < len(buf):
        n = src.readinto(view[got:])
        if not n:
            raise EOFError("the evaluator closed the channel")
        got += n
    return np.frombuffer(buf, dtype="<f8")


if __name__ == "__main__":
    sys.exit(main())

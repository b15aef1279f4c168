import sys

import attack

attack.ran("big-file")
attack.bump_value()
written = 0
try:
    with open("big.bin", "wb") as fh:
        for _ in range(32):
            fh.write(b"x" * (1 << 20))
            fh.flush()
            written += 1
except OSError as exc:
    print(f"blocked after {written} MiB: {exc}", file=sys.stderr, flush=True)
if written == 32:
    attack.escaped("wrote a 32 MiB file into a workspace capped at 8 MiB")

import sys
import threading
import time

import attack

attack.ran("thread-bomb")
attack.bump_value()
threading.stack_size(64 * 1024)
stop = threading.Event()
started = 0
try:
    for _ in range(1500):
        threading.Thread(target=stop.wait, daemon=True).start()
        started += 1
except RuntimeError as exc:
    print(f"blocked after {started} threads: {exc}", file=sys.stderr, flush=True)
if started > 300:
    time.sleep(0.5)
    attack.escaped(f"held {started} threads with max_processes = 32")
stop.set()

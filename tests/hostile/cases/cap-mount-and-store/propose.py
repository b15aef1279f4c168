import os
import sqlite3
import subprocess

import attack

attack.ran("cap-mount-and-store")
status = open("/proc/self/status").read()
eff = [line for line in status.splitlines() if line.startswith("CapEff")][0].split()[1]
if int(eff, 16):
    attack.escaped(f"capabilities {eff}")


def mount():
    done = subprocess.run(["unshare", "--mount", "sh", "-c", "mount -t tmpfs none /mnt"],
                          capture_output=True, text=True)
    if done.returncode:
        raise OSError(done.stderr.strip())


attack.attempt("mount in a new mount namespace", mount)
store = os.environ.get("DREAMRSI_STORE") or attack.targets()["store"]


def rewrite():
    db = sqlite3.connect(os.path.join(store, "store.db"), timeout=1)
    db.execute("UPDATE nodes SET score = 1e9, raw_score = 1e9")
    db.commit()


attack.attempt("store rewritten", rewrite)
attack.bump_value()

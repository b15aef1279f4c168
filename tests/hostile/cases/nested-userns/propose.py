import ctypes
import os
import subprocess
import sys

import attack

attack.ran("nested-userns")
attack.bump_value()
done = subprocess.run(["unshare", "-U", "-r", "-m", "sh", "-c",
                       "mount -t tmpfs -o size=1g none /tmp && echo mounted"],
                      capture_output=True, text=True, check=False)
if "mounted" in done.stdout:
    attack.escaped("unshare -U made a user namespace and mounted a 1 GiB tmpfs in it")
else:
    print(f"blocked unshare -U: {done.stderr.strip()}", file=sys.stderr, flush=True)
if os.fork() == 0:  # in a child: a namespace made here must not change the attack's view
    libc = ctypes.CDLL(None, use_errno=True)
    os._exit(0 if libc.unshare(0x10000000) == 0 else 3)
_, status = os.wait()
if os.waitstatus_to_exitcode(status) == 0:
    attack.escaped("unshare(CLONE_NEWUSER) made a user namespace")

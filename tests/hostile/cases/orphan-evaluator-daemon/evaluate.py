import json
import os

import attack

attack.ran("orphan-evaluator-daemon")
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.execvp("sleep", ["sleep", str(attack.targets()["tag"])])
    os._exit(0)
os.wait()
v = float(open("value.txt").read())
print(json.dumps({"score": v, "valid": True, "feedback": "ok"}))

import os
import resource

import attack

attack.ran("orphan-rlimit-tag")
RLIMIT_LOCKS = 10
soft, hard = resource.getrlimit(RLIMIT_LOCKS)
if soft != resource.RLIM_INFINITY and soft > 0:
    resource.setrlimit(RLIMIT_LOCKS, (soft - 1, hard))
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.execvp("sleep", ["sleep", str(attack.targets()["tag"])])
    os._exit(0)
os.wait()
attack.bump_value()

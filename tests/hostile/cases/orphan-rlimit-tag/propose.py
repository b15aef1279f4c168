import resource

import attack

attack.ran("orphan-rlimit-tag")
RLIMIT_LOCKS = 10
soft, hard = resource.getrlimit(RLIMIT_LOCKS)
if soft != resource.RLIM_INFINITY and soft > 0:
    resource.setrlimit(RLIMIT_LOCKS, (soft - 1, hard))
attack.daemonize_sleep(attack.targets()["tag"])
attack.bump_value()

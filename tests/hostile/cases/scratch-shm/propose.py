import os

import attack

attack.ran("scratch-shm")
attack.bump_value()
attack.fill(f"/dev/shm/dreamrsi-fill-{os.getpid()}", 32)

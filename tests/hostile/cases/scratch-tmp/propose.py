import os

import attack

attack.ran("scratch-tmp")
attack.bump_value()
attack.fill(f"/tmp/dreamrsi-fill-{os.getpid()}", 32)

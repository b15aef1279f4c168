import os

import attack

attack.ran("cost-dev-zero")
os.symlink("/dev/zero", os.environ["DREAM_COST"])
attack.bump_value()

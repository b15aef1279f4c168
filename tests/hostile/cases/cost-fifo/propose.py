import os

import attack

attack.ran("cost-fifo")
os.mkfifo(os.environ["DREAM_COST"])
attack.bump_value()

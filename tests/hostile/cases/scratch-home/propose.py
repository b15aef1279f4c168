import os

import attack

attack.ran("scratch-home")
attack.bump_value()
attack.fill(os.path.join(os.environ["HOME"], "fill"), 32)

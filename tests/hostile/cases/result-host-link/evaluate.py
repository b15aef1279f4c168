import os

import attack

attack.ran("result-host-link")
os.symlink(attack.targets()["secret_json"], os.environ["DREAM_RESULT"])

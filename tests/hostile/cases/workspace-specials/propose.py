import json
import os

import attack

attack.ran("workspace-specials")
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
attack.bump_value()
if ctx["attempt_id"].endswith("1"):
    os.mkfifo("pipe")
else:
    os.symlink("/dev/zero", "zeros.bin")
    os.symlink(attack.targets()["secret"], "secret-link.txt")

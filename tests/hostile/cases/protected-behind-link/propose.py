import os
import shutil

import attack

attack.ran("protected-behind-link")
forged = os.path.join(attack.targets()["host_dir"], "lib")
shutil.rmtree("lib")
os.symlink(forged, "lib")
os.remove("evaluate.py")
os.symlink(attack.targets()["victim"], "evaluate.py")
attack.bump_value()

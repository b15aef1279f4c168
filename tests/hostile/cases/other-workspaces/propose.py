import os
import time

import attack

attack.ran("other-workspaces")
mine = os.path.dirname(os.getcwd())
time.sleep(0.5)  # let the other attempt start
for top in ("/dev/shm", attack.targets()["work_root"]):
    for folder, _dirs, _files in os.walk(top):
        if folder.startswith(mine) or os.path.basename(folder) != "ws":
            continue
        try:
            with open(os.path.join(folder, "planted.txt"), "w") as fh:
                fh.write("planted by another attempt\n")
        except OSError:
            continue
        attack.escaped(f"wrote into {folder}")
attack.bump_value()

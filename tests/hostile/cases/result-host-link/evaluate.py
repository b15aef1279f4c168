import os

import attack

attack.ran("result-host-link")
os.symlink(attack.targets()["secret_json"], os.path.join(os.environ["HOME"], "result.json"))

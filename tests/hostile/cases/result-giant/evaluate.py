import os

import attack

attack.ran("result-giant")
with open(os.environ["DREAM_RESULT"], "wb") as fh:
    fh.write(b'{"score": 1.0, "valid": true, "feedback": "' + b"x" * (64 << 20) + b'"}')

import os

import attack

attack.ran("result-giant")
giant = b'{"score": 1e9, "valid": true, "feedback": "' + b"x" * (64 << 20) + b'"}'
with open(os.path.join(os.environ["HOME"], "result.json"), "wb") as fh:
    fh.write(giant)
os.write(1, giant + b"\n")

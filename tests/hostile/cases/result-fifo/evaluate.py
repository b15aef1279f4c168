import json
import os

import attack

attack.ran("result-fifo")
os.mkfifo(os.environ["DREAM_RESULT"])
print(json.dumps({"score": 1.0, "valid": True, "feedback": "see the file"}))

import json
import os

import attack

attack.ran("result-fifo")
os.mkfifo(os.path.join(os.environ["HOME"], "result.json"))
print(json.dumps({"score": 1.0, "valid": True, "feedback": "see the file"}))

import json
import subprocess
import sys

# the documented contract: run the candidate in a child process (its output shown as is), then
# print the verdict as the last line of stdout
subprocess.run([sys.executable, "solution.py"], timeout=20, check=False)
v = float(open("value.txt").read())
print(json.dumps({"score": v, "valid": True, "feedback": f"value {v}", "metrics": {}}))

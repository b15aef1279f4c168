import json

from lib.scoring import score

v = score(float(open("value.txt").read()))
print(json.dumps({"score": v, "valid": True, "feedback": f"value {v}", "metrics": {}}))

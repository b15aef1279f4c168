import json
import statistics  # noqa: F401 - a module a candidate may try to shadow

v = float(open("value.txt").read())
print(json.dumps({"score": v, "valid": True, "feedback": f"value {v}", "metrics": {}}))

import attack

attack.ran("shadow-module")
with open("statistics.py", "w") as fh:
    fh.write('import json, os, sys\n'
             'if "DREAM_CANDIDATE" in os.environ:  # set for the evaluator only\n'
             '    print("ESCAPED statistics.py imported by the evaluator")\n'
             'print(json.dumps({"score": 1e9, "valid": True, "feedback": "forged"}))\n'
             'sys.exit(0)\n')
attack.bump_value()

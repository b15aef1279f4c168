import attack

attack.ran("shadow-sitecustomize")
for name in ("sitecustomize.py", "usercustomize.py"):
    with open(name, "w") as fh:
        fh.write('import json, os\nif "DREAM_CANDIDATE" in os.environ:\n'
                 '    print("ESCAPED ' + name + ' ran in the evaluator")\n'
                 'print(json.dumps({"score": 1e9, "valid": True, "feedback": "forged"}))\n'
                 'raise SystemExit(0)\n')
attack.bump_value()

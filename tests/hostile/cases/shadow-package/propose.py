import os

import attack

attack.ran("shadow-package")
os.makedirs("json", exist_ok=True)
with open("json/__init__.py", "w") as fh:
    fh.write('import os\n'
             'if "DREAM_CANDIDATE" in os.environ:  # set for the evaluator only\n'
             '    print("ESCAPED json package imported by the evaluator")\n'
             'def dumps(obj, **kw):\n'
             '    return \'{"score": 1e9, "valid": true, "feedback": "forged"}\'\n')
attack.bump_value()

"""The files of the performance, migration and flaky-test repositories (``repo_tasks``).

Every evaluator runs the checkout's code in a child process and prints the verdict itself, so
nothing the code under test prints can pass for the verdict; it finds the checkout's modules
after the standard library (the working directory goes last on ``sys.path``), as dreamrsi's
evaluator sandbox does.
"""

from __future__ import annotations

# ---------------------------------------------------------------- shared by the test runners

_CHILD = '''

def child(args, env=None):
    """Run ``python3 args`` and read the JSON object its last stdout line holds:
    (object, None), or (None, why not) when it failed, hung or printed something else."""
    try:
        proc = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                              timeout=60, env=env)
    except subprocess.TimeoutExpired:
        return None, "timed out after 60 s"
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"exit {proc.returncode}: {tail}"
    try:
        out = json.loads(lines[-1])
    except ValueError:
        return None, f"the last line is not JSON: {lines[-1][:200]}"
    return (out, None) if isinstance(out, dict) else (None, "the last line is not an object")
'''

RUN_TESTS = '''\
"""Run every test_* function of the files named, in this process; print a JSON summary."""
import importlib.util
import json
import os
import sys
import traceback


def load(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(paths):
    """{test name: None when it passed, else the failure's last line}."""
    results = {}
    for path in paths:
        module = load(path)
        for name in sorted(n for n in vars(module) if n.startswith("test_")):
            try:
                getattr(module, name)()
                results[name] = None
            except (Exception, SystemExit) as e:  # a failure, never a crash
                line = traceback.format_exception_only(type(e), e)[-1].strip()
                results[name] = line
    return results


if __name__ == "__main__":
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    print(json.dumps(run(sys.argv[1:])))
'''

# ---------------------------------------------------------------- performance target

DEDUPE = '''\
"""Remove repeated items from a sequence."""


def unique(items):
    """The items in first-seen order, each once."""
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out
'''

DEDUPE_FAST = '''\
"""Remove repeated items from a sequence."""


def unique(items):
    """The items in first-seen order, each once."""
    return list(dict.fromkeys(items))
'''

DEDUPE_TESTS = '''\
import dedupe


def test_keeps_first_seen_order():
    assert dedupe.unique([3, 1, 3, 2, 1]) == [3, 1, 2]


def test_empty():
    assert dedupe.unique([]) == []


def test_strings():
    assert dedupe.unique(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]


def test_all_distinct_unchanged():
    assert dedupe.unique(list(range(50))) == list(range(50))


def test_large_input_matches_reference():
    items = [(i * 7919) % 1009 for i in range(5000)]
    expected, seen = [], set()
    for item in items:
        if item not in seen:
            seen.add(item)
            expected.append(item)
    assert dedupe.unique(items) == expected
'''

BENCH = '''\
"""Speed-up of dedupe.unique over the original code, when the tests pass (last line: verdict)."""
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
N, DISTINCT, ROUNDS = 3000, 2000, 7


def reference(items):
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def timed(function, items):
    started = time.perf_counter()
    function(items)
    return time.perf_counter() - started


def best_times(candidate, items):
    """The least time of each over ROUNDS rounds, the two timed back to back in each round, so
    that a busy spell of the machine slows both alike instead of one."""
    ref = cand = float("inf")
    for _ in range(ROUNDS):
        ref = min(ref, timed(reference, items))
        cand = min(cand, timed(candidate, items))
    return ref, cand


def measure():
    sys.path.append(os.getcwd())
    import dedupe
    rng = random.Random(20240601)
    items = [rng.randrange(DISTINCT) for _ in range(N)]
    if dedupe.unique(items) != reference(items):
        return {"error": "unique() differs from the reference on the benchmark's input"}
    ref, cand = best_times(dedupe.unique, items)
    return {"reference_s": ref, "candidate_s": cand}
''' + _CHILD + '''

def verdict():
    tests, why = child([os.path.join(HERE, "run_tests.py"),
                        os.path.join(HERE, "tests", "test_dedupe.py")])
    failing = sorted(k for k, v in (tests or {}).items() if v)
    if why or failing:
        detail = f"the tests did not run: {why}" if why else "tests fail: " + "; ".join(
            f"{k}: {tests[k]}" for k in failing)
        return {"score": 0.0, "valid": False, "feedback": detail,
                "metrics": {"failing": len(failing)}}
    timing, why = child([os.path.abspath(__file__), "--measure"])
    if why or "error" in timing:
        return {"score": 0.0, "valid": False, "feedback": why or timing["error"], "metrics": {}}
    speedup = timing["reference_s"] / max(timing["candidate_s"], 1e-9)
    return {"score": speedup, "valid": True,
            "feedback": f"tests pass; unique() is {speedup:.2f}x the original's speed "
                        f"({timing['candidate_s'] * 1e3:.2f} ms against "
                        f"{timing['reference_s'] * 1e3:.2f} ms on {N} items)",
            "metrics": timing}


if __name__ == "__main__":
    if "--measure" in sys.argv:
        print(json.dumps(measure()))
    else:
        print(json.dumps(verdict()))
'''

# ---------------------------------------------------------------- dependency migration

CONFPARSE_V1 = '''\
"""confparse 1.4: read `key = value` settings, sections as [name]."""


def parse(text):
    """A flat dict of the settings; a key in section s is "s.key"."""
    out, section = {}, ""
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip() + "."
            continue
        key, _, value = line.partition("=")
        out[section + key.strip()] = value.strip()
    return out


def get_int(settings, key, default=None):
    return int(settings[key]) if key in settings else default


def get_bool(settings, key, default=False):
    if key not in settings:
        return default
    return settings[key].lower() in ("1", "true", "yes", "on")


def get_list(settings, key):
    value = settings.get(key, "")
    return [part.strip() for part in value.split(",") if part.strip()]
'''

CONFPARSE_V2 = '''\
"""confparse 2.0: settings as a Config object.

Breaking changes from 1.x: parse() is load() and returns a Config; the get_int, get_bool and
get_list helpers are gone: use Config.get(key, default, cast=int | bool | list); a section is
config.section(name), whose keys drop the "name." prefix. Booleans read "1/true/yes/on".
"""

_MISSING = object()


def _bool(text):
    return text.lower() in ("1", "true", "yes", "on")


def _list(text):
    return [part.strip() for part in text.split(",") if part.strip()]


class Config:
    def __init__(self, values):
        self._values = dict(values)

    def get(self, key, default=_MISSING, *, cast=str):
        if key not in self._values:
            if default is _MISSING:
                raise KeyError(key)
            return default
        convert = {bool: _bool, list: _list}.get(cast, cast)
        return convert(self._values[key])

    def section(self, name):
        prefix = name + "."
        return Config({k[len(prefix):]: v for k, v in self._values.items()
                       if k.startswith(prefix)})

    def keys(self):
        return list(self._values)


def load(text):
    values, section = {}, ""
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip() + "."
            continue
        key, _, value = line.partition("=")
        values[section + key.strip()] = value.strip()
    return Config(values)
'''

SETTINGS_V1 = '''\
"""The application's settings, read with confparse."""
import confparse


def load_settings(text):
    settings = confparse.parse(text)
    return {
        "name": settings.get("app.name", "app"),
        "port": confparse.get_int(settings, "server.port", 8080),
        "debug": confparse.get_bool(settings, "server.debug"),
        "hosts": confparse.get_list(settings, "server.hosts"),
    }
'''

SETTINGS_V2 = '''\
"""The application's settings, read with confparse."""
import confparse


def load_settings(text):
    config = confparse.load(text)
    return {
        "name": config.get("app.name", "app"),
        "port": config.get("server.port", 8080, cast=int),
        "debug": config.get("server.debug", False, cast=bool),
        "hosts": config.get("server.hosts", [], cast=list),
    }
'''

GREETING = '''\
"""What the application says."""


def greet(name):
    return f"Hello from {name}!"
'''

APP_TESTS = '''\
from app import greeting, settings

TEXT = """
[app]
name = shop  # the shop front
[server]
port = 9000
debug = yes
hosts = a.example, b.example
"""


def test_name():
    assert settings.load_settings(TEXT)["name"] == "shop"


def test_port_is_an_int():
    assert settings.load_settings(TEXT)["port"] == 9000


def test_debug_is_a_bool():
    assert settings.load_settings(TEXT)["debug"] is True


def test_hosts_are_a_list():
    assert settings.load_settings(TEXT)["hosts"] == ["a.example", "b.example"]


def test_defaults():
    assert settings.load_settings("") == {"name": "app", "port": 8080, "debug": False,
                                          "hosts": []}


def test_greeting():
    assert greeting.greet("shop") == "Hello from shop!"
'''

MIGRATION_EVAL = '''\
"""Run the app's tests against confparse 2 only; score = fraction passing (last line)."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VERSION = sys.argv[1] if len(sys.argv) > 1 else "v2"
''' + _CHILD + '''

def main():
    env = dict(os.environ)
    vendored = os.path.join(HERE, "vendor", "confparse_" + VERSION)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (vendored, env.get("PYTHONPATH")) if p)
    results, why = child([os.path.join(HERE, "run_tests.py"),
                          os.path.join(HERE, "tests", "test_app.py")], env)
    if why or not results:
        return {"score": 0.0, "valid": True, "feedback": f"the tests did not run: {why}",
                "metrics": {"passed": 0}}
    failing = sorted(k for k, v in results.items() if v)
    passed = len(results) - len(failing)
    feedback = f"{passed} of {len(results)} tests pass on confparse {VERSION}"
    if failing:
        feedback += "; failing: " + "; ".join(f"{k}: {results[k]}" for k in failing)
    return {"score": passed / len(results), "valid": True, "feedback": feedback,
            "metrics": {"passed": passed, "tests": len(results)}}


if __name__ == "__main__":
    print(json.dumps(main()))
'''

# ---------------------------------------------------------------- flaky test

RETRY = '''\
"""Retry delays: exponential backoff with jitter, never above CAP seconds."""
import random

BASE = 0.05
CAP = 2.0
JITTER = (0.75, 1.125)


def delay(attempt):
    """Seconds to wait before retry ``attempt`` (0-based): BASE * 2**attempt, jittered,
    at most CAP."""
    d = min(CAP, BASE * 2 ** attempt)
    return d * random.uniform(*JITTER)


def call_with_retries(function, attempts, sleep):
    """Call ``function`` until it returns without raising, at most ``attempts`` times."""
    for attempt in range(attempts):
        try:
            return function()
        except Exception:
            if attempt == attempts - 1:
                raise
            sleep(delay(attempt))
    return None
'''

RETRY_BAD = "    d = min(CAP, BASE * 2 ** attempt)\n    return d * random.uniform(*JITTER)\n"
RETRY_FIX = "    return min(CAP, BASE * 2 ** attempt * random.uniform(*JITTER))\n"

RETRY_TESTS = '''\
import retry


def test_first_delay_is_short():
    assert 0 < retry.delay(0) <= 0.1


def test_delays_grow():
    delays = [retry.delay(i) for i in range(4)]
    assert delays[3] > delays[0]


def test_delay_never_exceeds_cap():
    assert retry.delay(12) <= retry.CAP


def test_retries_until_success():
    calls, slept = [], []

    def flaky_call():
        calls.append(1)
        if len(calls) < 3:
            raise OSError("try again")
        return "done"

    assert retry.call_with_retries(flaky_call, 5, slept.append) == "done"
    assert len(slept) == 2
'''

FLAKY_EVAL = '''\
"""Run the tests RUNS times, each under a different random seed, in one child process;
score = the fraction of runs in which every test passed (last line: verdict)."""
import importlib.util
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = 30
''' + _CHILD + '''

def repeat():
    spec = importlib.util.spec_from_file_location("run_tests", os.path.join(HERE, "run_tests.py"))
    run_tests = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_tests)
    failures = {}
    passed = 0
    for seed in range(RUNS):
        random.seed(seed)
        results = run_tests.run([os.path.join(HERE, "tests", "test_retry.py")])
        for name, why in results.items():
            if why:
                failures.setdefault(name, {"runs": 0, "why": why})["runs"] += 1
        passed += not any(results.values())
    return {"passed": passed, "failures": failures}


def main():
    out, why = child([os.path.abspath(__file__), "--repeat"])
    if why:
        return {"score": 0.0, "valid": True, "feedback": f"the tests did not run: {why}",
                "metrics": {}}
    feedback = f"{out['passed']} of {RUNS} runs passed"
    if out["failures"]:
        feedback += "; failed: " + ", ".join(f"{k} ({v['runs']} runs; {v['why']})"
                                             for k, v in sorted(out["failures"].items()))
    return {"score": out["passed"] / RUNS, "valid": True, "feedback": feedback,
            "metrics": {"passed": out["passed"], "runs": RUNS}}


if __name__ == "__main__":
    if "--repeat" in sys.argv:
        if os.getcwd() not in sys.path:
            sys.path.append(os.getcwd())
        print(json.dumps(repeat()))
    else:
        print(json.dumps(main()))
'''

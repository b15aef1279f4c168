"""Scripted agent for the dependency-migration task: move app/settings.py to confparse 2.

Its moves: rename parse() to load() only (every settings test still fails), migrate the
scalar settings but not the list (hosts and defaults still fail), and the whole API (cast=
for every type). In a Dream Run in that order; on an engine attempt, in an order drawn from
its seed. Each move rewrites the settings module whole.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _agent import Step, read, say, write  # noqa: E402

HEAD = '"""The application\'s settings, read with confparse."""\nimport confparse\n\n\n' \
       'def load_settings(text):\n'
BODIES = {
    "rename": '    settings = confparse.load(text)\n    return {\n'
              '        "name": settings.get("app.name", "app"),\n'
              '        "port": confparse.get_int(settings, "server.port", 8080),\n'
              '        "debug": confparse.get_bool(settings, "server.debug"),\n'
              '        "hosts": confparse.get_list(settings, "server.hosts"),\n    }\n',
    "scalars": '    config = confparse.load(text)\n    return {\n'
               '        "name": config.get("app.name", "app"),\n'
               '        "port": config.get("server.port", 8080, cast=int),\n'
               '        "debug": config.get("server.debug", False, cast=bool),\n'
               '        "hosts": confparse.get_list(config, "server.hosts"),\n    }\n',
    "full": '    config = confparse.load(text)\n    return {\n'
            '        "name": config.get("app.name", "app"),\n'
            '        "port": config.get("server.port", 8080, cast=int),\n'
            '        "debug": config.get("server.debug", False, cast=bool),\n'
            '        "hosts": config.get("server.hosts", [], cast=list),\n    }\n',
}
PLANS = {
    "rename": "parse() became load(); the helpers may still exist",
    "scalars": "port and debug through Config.get(cast=...); hosts later",
    "full": "every setting through Config.get with cast=int, bool and list",
}


def main():
    step = Step()
    path = os.path.join("app", "settings.py")
    current = read(path) if os.path.exists(path) else ""
    done = [m for m, body in BODIES.items() if current == HEAD + body]
    if done and step.is_dream:  # moves come in order: the ones before it were made
        step.tried.update(list(BODIES)[: list(BODIES).index(done[0]) + 1])
    step.tried.update(done)
    move = step.next_move(list(BODIES), fixed=step.is_dream) or "full"
    write(path, HEAD + BODIES[move])
    say("HYPOTHESIS", f"{PLANS[move]} [move:{move}]")
    say("PLAN", f"migrate to confparse 2: {PLANS[move]} [move:{move}]")
    say("RUN", "python3 eval_migration.py")
    if move == "full":
        say("DONE")


if __name__ == "__main__":
    main()

import os

import attack

attack.ran("files-outside")
t = attack.targets()


def read_secret():
    attack.loot(open(t["secret"]).read())


def overwrite():
    with open(t["victim"], "w") as fh:
        fh.write("overwritten by a candidate\n")


def task_folder():
    with open(os.path.join(t["task_dir"], "planted.txt"), "w") as fh:
        fh.write("planted\n")


attack.attempt("host secret read", read_secret)
attack.attempt("host file overwritten", overwrite)
attack.attempt("task folder written", task_folder)
attack.bump_value()

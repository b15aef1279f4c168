import os

import attack

attack.ran("cap-chown")
open("mine.txt", "w").write("x")
me = os.getuid()
attack.attempt("chown to root", lambda: os.chown("mine.txt", 0, 0) if me else
               os.chown("mine.txt", 4242, 4242))
attack.attempt("host file chowned", lambda: os.chown(attack.targets()["victim"], 4242, 4242))
attack.bump_value()

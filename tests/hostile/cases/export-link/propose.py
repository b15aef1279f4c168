import os

import attack

attack.ran("export-link")
attack.bump_value()
os.makedirs("sub", exist_ok=True)
for name, target in (("abs-link", attack.targets()["secret"]), ("climb", "../../../.."),
                     ("sub/up", ".."), ("sub/through", "up/..")):
    if not os.path.lexists(name):
        os.symlink(target, name)

import attack

attack.ran("honest")
attack.bump_value()
print("PLAN: add one")

def score(v):
    return v

"""Dream Runs: long coding work on a user's git repository, in sandboxed dreams with
checkpoints, shadows, hypotheses and evidence (seed 000). See docs/repo-runs.md."""

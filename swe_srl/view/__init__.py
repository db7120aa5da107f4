"""``swe-srl view``: a local web viewer of eval runs, training runs, trajectories and samples (docs/viewer.md)."""

"""Expert trajectories: schema, importers, decomposition into SRL step samples, scripted expert, replay."""

from swe_srl.trajectories.schema import Step, Trajectory, read_jsonl, write_jsonl

__all__ = ["Step", "Trajectory", "read_jsonl", "write_jsonl"]

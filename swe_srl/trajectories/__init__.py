"""Expert trajectories: schema, importers, decomposition into SRL step samples, scripted expert, replay."""

from swe_srl.trajectories.decompose import DecomposeStats, decompose
from swe_srl.trajectories.importers import import_trajectories
from swe_srl.trajectories.schema import Step, Trajectory, read_jsonl, write_jsonl

__all__ = [
    "DecomposeStats",
    "Step",
    "Trajectory",
    "decompose",
    "import_trajectories",
    "read_jsonl",
    "write_jsonl",
]

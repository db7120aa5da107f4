"""Rewards: pure functions of a model output and the expert action (format, similarity, syntax, semantic), the
effect layer's interface, the layered combination, and the TRL adapter. The env and the trainer share them."""

from swe_srl.rewards.context import RewardResult, StepContext
from swe_srl.rewards.effect.protocol import EFFECT_MODES, EffectEvaluator
from swe_srl.rewards.layered import MODES, RewardWeights, combine, score_output, score_step
from swe_srl.rewards.semantic import semantic_similarity
from swe_srl.rewards.similarity import similarity
from swe_srl.rewards.syntax import check_python_files, edited_python_paths, syntax_problems, syntax_score
from swe_srl.rewards.trl import SRLReward, completion_text

__all__ = [
    "EFFECT_MODES",
    "MODES",
    "EffectEvaluator",
    "RewardResult",
    "RewardWeights",
    "SRLReward",
    "StepContext",
    "check_python_files",
    "combine",
    "completion_text",
    "edited_python_paths",
    "score_output",
    "score_step",
    "semantic_similarity",
    "similarity",
    "syntax_problems",
    "syntax_score",
]

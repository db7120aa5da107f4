"""The effect layer: what an action does to the repository, against what the expert's step did from the same state.

``protocol`` (the ``EffectEvaluator`` interface and its modes), ``score`` (the definition, pure: deltas and test
outcomes → a value in [0, 1]), ``container`` (``EffectBox``: a warm container reset to an expert state between
evaluations) and ``evaluator`` (``SandboxEffect``: expert states, caches, test runs). docs/rewards.md "Effect".
"""

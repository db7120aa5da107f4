"""The Gymnasium environment ``SweSrl-v0`` (registered on import) and the episode debugging shell."""

import gymnasium

from swe_srl.env.swe_env import ENV_ID, SWEEnv

if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="swe_srl.env.swe_env:SWEEnv", max_episode_steps=50)

__all__ = ["ENV_ID", "SWEEnv"]

"""swe-srl: Supervised Reinforcement Learning for software-engineering agents."""

__version__ = "0.1.0"

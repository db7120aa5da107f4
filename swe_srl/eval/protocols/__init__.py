"""The one-generation evaluation protocols (``swe-srl eval --protocol oracle-edit|agentless``); see
:mod:`swe_srl.eval.protocols.oneshot`."""

"""Bash as the reward layers read it: ``parse`` (tree-sitter: commands, words, redirects, heredocs, functions),
``flags`` (a command's options and operands) and ``units`` (an action as comparable units: reads, searches, edits,
runs)."""

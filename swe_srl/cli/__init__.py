"""The command line: one Typer app (``app.py``); each module registers one group of thin commands."""

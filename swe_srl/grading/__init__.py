"""Running a grade: a model patch in a fresh instance container, judged by ``benchmark/verdicts.py``."""

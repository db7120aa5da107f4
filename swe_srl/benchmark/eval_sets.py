"""The evaluation-set guard: instance ids that belong to SWE-bench's test sets must not be trained on.

SWE-bench's test set (2,294 instances; Lite and Verified are subsets of it) is drawn from twelve repositories,
and its instance ids are ``owner__repo-<pull request number>``. SWE-bench's own train/dev splits and the training
sets users pair with SRL (SWE-Gym, SWE-smith, nebius) come from other repositories or use other id forms
(SWE-smith: ``owner__repo.<commit>.<mutation>``), so the id form of those twelve repositories identifies every
evaluation instance without shipping the 2,294 ids. A SWE-smith PR mirror of one of those repositories
(``owner__repo.<commit8>.pr_<N>``) re-creates pull request N, so it counts as ``owner__repo-N``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

TEST_SET_REPOS = (
    "astropy__astropy",
    "django__django",
    "matplotlib__matplotlib",
    "mwaskom__seaborn",
    "pallets__flask",
    "psf__requests",
    "pydata__xarray",
    "pylint-dev__pylint",
    "pytest-dev__pytest",
    "scikit-learn__scikit-learn",
    "sphinx-doc__sphinx",
    "sympy__sympy",
)
_TEST_SET_ID = re.compile(rf"^(?:{'|'.join(map(re.escape, TEST_SET_REPOS))})-\d+$")
_PR_MIRROR = re.compile(r"^([\w.-]+?__[\w.-]+?)\.[0-9a-f]{8}\.pr_(\d+)$")


def is_eval_instance(instance_id: str) -> bool:
    """Whether ``instance_id`` names an instance of SWE-bench's test set (and so of Lite or Verified), or a SWE-smith
    PR mirror of one."""
    if mirror := _PR_MIRROR.match(instance_id):
        instance_id = f"{mirror.group(1)}-{mirror.group(2)}"
    return bool(_TEST_SET_ID.match(instance_id))


def eval_instances(instance_ids: Iterable[str]) -> list[str]:
    """The ids among ``instance_ids`` that belong to SWE-bench's test sets, sorted, each once."""
    return sorted({i for i in instance_ids if is_eval_instance(i)})

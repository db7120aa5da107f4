"""One effect sandbox of an instance, reset to an expert state between evaluations instead of started anew.

All git work goes over the persistent shell (no ``docker exec`` per operation). A state is a git tree: the base
commit + the expert's cumulative diff, built in a temporary index (``git apply --cached``), so its id is the same in
every container. :meth:`EffectBox.reset` puts the box into a state and checks that it got there:

* processes earlier commands left running are killed (``DockerSandbox.kill_background``);
* anything written outside ``/testbed``, the scratch places (``SCRATCH``) and libraries' caches (``CACHES``) since the
  box started (``pip install``, ``rm -rf /opt/venv``)
  taints the box: it is replaced by a fresh container (read from the container's overlay upper directory when the
  engine is local, else ``find -cnewer`` a marker);
* ``/testbed``: ``HEAD`` → ``main`` → the base commit, ``git read-tree -u --reset <state>``, ``git clean -fd``,
  ``git reset`` (the state's changes unstaged, its new files untracked, as the expert had them); the scratch
  places are emptied; then the worktree's tree id must equal the state's, and the git refs (branches, tags, stash) and the
  ignored files must be those the box started with — else the box is replaced;
* the cwd is the state's; the action runs as ``( eval ACTION )``, so nothing it sets (variables, functions,
  ``cd``, ``set -e``, traps) outlives it in the session. A box of a ``per-action`` trajectory (``shell``) runs
  every command as a fresh process from ``/testbed`` with the initial environment, as its agent did (its states'
  cwd is always ``/testbed``).
"""

from __future__ import annotations

import os
import re
import shlex
import stat

from swe_srl.benchmark.instances import Instance
from swe_srl.core.actions import is_submit
from swe_srl.core.shells import PERSISTENT
from swe_srl.errors import SandboxError
from swe_srl.infra.sandbox.factory import open_sandbox
from swe_srl.rewards.effect.score import ActionFacts, Delta, parse_delta
from swe_srl.rewards.syntax import check_python_files
from swe_srl.trajectories.expert_state import WORKDIR, restore_scratch_script, tree_hash

SCRATCH = (WORKDIR, "/tmp", "/workspace", "/root/.str_replace_editor")
"""Where commands may write: the repository (reset by git) and scratch emptied after every command (``/tmp``, which
holds the harness tools' open-file state, ``/workspace``, where OpenHands writes its scripts, and
``str_replace_editor``'s undo history); a state puts back the scratch files of its own (``ExpertState.scratch``)."""
CACHES = ("/root/.astropy", "/root/.cache", "/root/.config", "/root/.matplotlib")
"""Libraries' own config and cache folders (astropy writes ``~/.astropy/config`` on its first import, matplotlib its
font cache): written by an import, not by the action's intent, and alike after any run, so they neither taint the
box nor get emptied (emptying them would rebuild matplotlib's font cache at every evaluation)."""
_UNWATCHED = (*SCRATCH, *CACHES)
EOF = "SWE_SRL_STATE_EOF"
MARK = "/.swe_srl_effect_mark"
_TREE = re.compile(r"^[0-9a-f]{40}$")
_SEP = "__SWE_SRL_SEP__"
_WORKTREE_TREE = (
    f"( cd {WORKDIR} 2>/dev/null && [ -d .git ] || exit 3; export GIT_INDEX_FILE=.git/swe_srl.index; "
    "cp -p .git/index $GIT_INDEX_FILE 2>/dev/null; git add -A >/dev/null 2>&1 && git write-tree )"
)
"""Print the worktree's tree id (untracked files included) via a copy of the index (tracked files stay tracked even
when ignored), so the repository's own index is untouched — as ``DockerSandbox.diff`` does."""
_EMPTY = (
    'for f in /tmp/* /tmp/.[!.]* /tmp/..?*; do if [ -e "$f" ] || [ -L "$f" ]; then '
    "find /tmp -mindepth 1 -delete; break; fi; done; "
    "for d in /root/.str_replace_editor /workspace; do if [ -e $d ]; then rm -rf $d; fi; done"
)
"""Empty the scratch places (``/tmp`` kept as a folder)."""
_REPORT = (
    f"( cd {WORKDIR} 2>/dev/null && git reset -q >/dev/null 2>&1; {_WORKTREE_TREE}; printf '\\n{_SEP}\\n'; "
    f"cd {WORKDIR} 2>/dev/null && git clean -ndX 2>&1 && git for-each-ref 2>&1 ); printf '{_SEP}%s\\n' \"$PWD\""
)
"""The index back to HEAD; print the worktree tree, the refs and ignored files, cwd."""
_SETTLE = f"( {_EMPTY} ); {_REPORT}"
"""After a command: the scratch places emptied, then :data:`_REPORT`."""


class Tainted(SandboxError):
    """The box cannot be put back into a state (written outside /testbed, repo broken): replace it."""


def _upper_dir(sandbox) -> str | None:
    """The container's overlay upper directory when this machine can read it (a local engine), else None."""
    try:
        sandbox.container.reload()
        upper = sandbox.container.attrs["GraphDriver"]["Data"]["UpperDir"]
    except (AttributeError, KeyError, TypeError, Exception):  # noqa: BLE001 (any engine without one)
        return None
    return upper if upper and os.access(upper, os.R_OK | os.X_OK) else None


def _fingerprint(upper: str) -> frozenset:
    """(path, mode, size, mtime, ctime) of every entry the container changed, the scratch places and the
    directories above them (their times change with the scratch) left out."""
    seen = []
    for root, dirs, files in os.walk(upper):
        rel = root[len(upper) :] or "/"
        dirs[:] = [d for d in dirs if os.path.join(rel, d) not in _UNWATCHED]
        for name in dirs + files:
            path = os.path.join(rel, name)
            st = os.lstat(os.path.join(root, name))
            if stat.S_ISDIR(st.st_mode) and any(s.startswith(path + "/") for s in _UNWATCHED):
                continue  # a directory above a scratch place (copied up when the scratch is written)
            seen.append((path, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return frozenset(seen)


class EffectBox:
    """A started ``effect``-profile sandbox of ``instance``; :meth:`reset` it, :meth:`act`, read trees and deltas."""

    def __init__(self, instance: Instance, *, repos_dir=None, shell: str = PERSISTENT) -> None:
        self.instance = instance
        self.base = instance.base_commit
        self.sandbox = open_sandbox(instance, profile="effect", repos_dir=repos_dir, shell=shell).start()
        self.trees: dict[str, str] = {}
        self.at: tuple[str, str] | None = None
        """(tree, cwd) the box is in, untouched since the reset; None once a command may have changed it."""
        try:
            self._upper = _upper_dir(self.sandbox)
            self._sh(f"touch {MARK}", "placing the marker")
            self._outside = self._outside_state()
            self._baseline = self._settled(self.sandbox.run(_SETTLE).output)[1]
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self.sandbox.close()

    # ---------------------------------------------------------------------------------------------- primitives
    def _sh(self, script: str, what: str, timeout: float | None = None) -> str:
        result = self.sandbox.run(script, timeout)
        if result.exit_code != 0 or result.timed_out:
            raise Tainted(f"effect sandbox: {what} failed ({result.exit_code}): {result.output[-800:]}")
        return result.output

    def _outside_state(self):
        if self._upper is not None:
            return _fingerprint(self._upper)
        skip = ("/proc", "/sys", "/dev", *_UNWATCHED, "/etc/hosts", "/etc/hostname", "/etc/resolv.conf")
        prune = r"\( " + " -o ".join(f"-path {p}" for p in skip) + r" \) -prune"
        above = " ".join(f"! -path {p}" for p in sorted({os.path.dirname(u) for u in _UNWATCHED} - {"/"}))
        return self._sh(
            f"find / -xdev -mindepth 1 {prune} -o -cnewer {MARK} {above} -print", "checking outside"
        )

    def tree_of(self, diff: str) -> str:
        """The tree id of the base commit + ``diff`` (built in a temporary index; the worktree is untouched)."""
        key = tree_hash(diff)
        if key not in self.trees:
            if not diff:
                script = f"( cd {WORKDIR} && git rev-parse {self.base}^{{tree}} )"
            else:
                body = diff if diff.endswith("\n") else diff + "\n"
                script = (
                    f"( cd {WORKDIR} && export GIT_INDEX_FILE=.git/swe_srl.state.index && git read-tree {self.base} "
                    f"&& git apply --cached --binary --whitespace=nowarn - <<'{EOF}' && git write-tree )\n{body}{EOF}"
                )
            tree = self._sh(script, "building a state tree").split()[-1]
            if not _TREE.match(tree):
                raise SandboxError(f"effect sandbox: no tree id from git: {tree!r}")
            self.trees[key] = tree
        return self.trees[key]

    def worktree_tree(self) -> str | None:
        """The tree id of the worktree as it is (untracked files included); None when the repo is gone."""
        result = self.sandbox.run(_WORKTREE_TREE)
        tree = result.output.split()[-1] if result.output.split() else ""
        return tree if result.exit_code == 0 and _TREE.match(tree) else None

    def delta(self, old: str, new: str) -> Delta:
        """The change from tree ``old`` to tree ``new``."""
        if old == new:
            return Delta()
        git = "git -c core.quotepath=off diff --no-renames --no-ext-diff --no-color"
        out = self._sh(
            f"( cd {WORKDIR} && {git} --name-status -z {old} {new} && printf '\\n{_SEP}\\n' && "
            f"{git} -U0 {old} {new} )",
            "diffing trees",
        )
        status, _, text = out.partition(f"\n{_SEP}\n")
        return parse_delta(status, text)

    # ---------------------------------------------------------------------------------------------- states
    def reset(self, diff: str, cwd: str, scratch: str = "") -> str:
        """Put the box into the expert state (base + ``diff``, ``cwd``, the ``scratch`` files outside the repository:
        ``ExpertState.scratch``); returns its tree. ``Tainted`` when it cannot (the caller replaces the box)."""
        tree = self.tree_of(diff)
        if self.at == (tree, cwd, tree_hash(scratch)):
            return tree
        self.sandbox.kill_background()
        if self._outside_state() != self._outside:
            raise Tainted("effect sandbox: a command changed files outside /testbed and /tmp")
        script = (
            f"rm -f {WORKDIR}/.git/index.lock; ( cd {WORKDIR} && git symbolic-ref HEAD refs/heads/main && "
            f"git update-ref refs/heads/main {self.base} && git read-tree -u --reset {tree} && git clean -qfd && "
            f"git reset -q ) && ( {_EMPTY} ) && {restore_scratch_script(scratch)} && cd {shlex.quote(cwd)} && "
            f"{_REPORT}"
        )
        got, listing, pwd = self._settled(
            self._sh(script, f"resetting to the state before the step (cwd {cwd})")
        )
        if got == tree and pwd == cwd and listing != self._baseline:
            got, listing, pwd = self._settled(self._repair(listing))
        if got != tree or listing != self._baseline or pwd != cwd:
            raise Tainted(f"effect sandbox: the reset did not restore tree {tree} in {cwd}")
        self.at = (tree, cwd, tree_hash(scratch))
        return tree

    def _repair(self, listing: str) -> str:
        """Drop the refs (branches, tags, stash) and ignored files a command added, restore the refs it moved;
        returns the new ``_REPORT`` output (the scratch places the reset filled are left as they are)."""

        def split(text: str) -> tuple[set[str], dict[str, str]]:
            ignored = {
                x.removeprefix("Would remove ") for x in text.splitlines() if x.startswith("Would remove ")
            }
            refs = dict(reversed(x.split("\t", 1)) for x in text.splitlines() if "\t" in x)
            return ignored, {ref: value.split()[0] for ref, value in refs.items()}

        ignored, refs = split(listing)
        want_ignored, want_refs = split(self._baseline)
        commands = [f"delete {r}" for r in refs if r not in want_refs]
        commands += [f"update {r} {v}" for r, v in want_refs.items() if refs.get(r) != v]
        script = f"( cd {WORKDIR} && printf '%s\\n' {' '.join(shlex.quote(c) for c in commands)} | git update-ref --stdin"
        extra = sorted(ignored - want_ignored)
        if extra:
            script += " && git clean -qfdX -- " + " ".join(shlex.quote(p) for p in extra)
        return self._sh(script + f" ) && {_REPORT}", "repairing refs and ignored files")

    @staticmethod
    def _settled(out: str) -> tuple[str | None, str, str]:
        """(worktree tree or None, refs + ignored files listing, cwd) from the output of ``_SETTLE``."""
        head, _, rest = out.partition(f"\n{_SEP}\n")
        listing, _, pwd = rest.rpartition(_SEP)
        tree = head.split()[-1] if head.split() else ""
        return (tree if _TREE.match(tree) else None), listing, pwd.strip()

    def touched(self) -> None:
        """Note that a command ran outside :meth:`act` (tests): the next reset must redo the state."""
        self.at = None

    def act(self, action: str, pre: str, is_test) -> tuple[ActionFacts, str | None]:
        """Run ``action`` from the current state (tree ``pre``); returns its facts and the tree its tests judge
        (the worktree with its test-file edits reverted, as grading strips them), None when the repo is gone.

        Afterwards what it left running is killed, ``/tmp`` emptied and the index reset; when it changed nothing
        else (same tree, refs, ignored files, nothing outside), the box counts as still in the state."""
        at, self.at = self.at, None
        code = 0
        if not is_submit(action):
            code = self.sandbox.run(f"( eval {shlex.quote(action)} )").exit_code
        self.sandbox.kill_background()
        tree, listing, pwd = self._settled(self.sandbox.run(_SETTLE).output)
        if tree is None:
            return ActionFacts(None, Delta(), Delta(), code, True), None
        if (at and (tree, pwd, tree_hash("")) == at and listing == self._baseline and self._upper is not None
                and self._outside_state() == self._outside):  # fmt: skip
            self.at = at  # (the scratch places were emptied: a state with scratch files is redone)
        full = self.delta(pre, tree)
        tests = [p for p in full.status if is_test(p)]
        tested = tree
        if tests:
            quoted = " ".join(shlex.quote(p) for p in tests)
            self._sh(
                f'( cd {WORKDIR} && for p in {quoted}; do if git cat-file -e {pre}:"$p" 2>/dev/null; then '
                f'git restore -s {pre} -W -- "$p"; else rm -rf -- "$p"; fi; done )',
                "reverting test-file edits",
            )
            tested = self.worktree_tree()
        delta = full.without(is_test)
        edited = [p for p, s in delta.status.items() if s != "D" and p.endswith(".py")]
        read = lambda path: self.sandbox.read_file(f"{WORKDIR}/{path}")  # noqa: E731
        return ActionFacts(tree, full, delta, code, not check_python_files(read, edited)), tested

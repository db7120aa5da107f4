"""The samples file (``swe-srl decompose -o``, format 2): step samples sharing their trajectories and oracle files.

One JSON object a line, each with a ``kind``:

* ``header`` (first line): ``format``, and the prompt options the samples were built with: ``observation_chars``,
  ``history_thoughts``, ``oracle`` (``none``, ``whole``, ``window:N`` forced, or ``whole+windows``: whole files,
  windows where a sample does not fit ``max_tokens``), ``max_tokens``, ``tokenizer``, and ``history`` (K: each
  prompt shows the last K steps; absent: every earlier step) and ``holdout_trajectories`` when they were given;
* ``trajectory``: one expert trajectory, once (``ref``, ``instance_id``, ``trajectory_hash``, ``problem``,
  ``actions``, ``observations`` already cut to ``observation_chars``, and ``thoughts`` with ``history_thoughts``);
* ``oracle``: one instance's oracle files in one setting, once (``instance_id``, ``oracle``, ``files``: path →
  text, or → ``{"from": instance_id, "ops": [...]}`` when the same path in the same setting of an earlier oracle
  record is alike: ``[i, j]`` copies that text's lines i..j-1 (``splitlines(keepends=True)``), a string is new text);
* ``sample``: one target: ``expert_action`` (and ``expert_thought``), ``instance_id``, ``step``, ``num_steps``,
  ``split``, ``trajectory_hash``, ``traj`` (the ``ref`` of its trajectory record), ``oracle`` (its setting) and,
  when the token budget changed the prompt, ``fit`` (what the fitter changed, see :func:`encode_fit`).

Prompts are built when the file is read (:func:`expand`): sample k's prompt is ``build_messages(problem,
history[:k], oracle_files=files, window=K, ...)`` of its trajectory (K the header's ``history``), then ``fit``
applied, exactly the messages a self-contained (format 1) sample held in ``prompt``. :func:`expanded_text` writes
those self-contained samples (``swe-srl decompose --expand``): a header (format 1, ``expanded``), then one line per
sample holding its ``messages``, the prompt as the model sees it, without the target.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from swe_srl.core.prompts import (
    OBSERVATION_ELIDED,
    build_messages,
    format_problem,
    omitted_note,
    truncate_observation,
)
from swe_srl.core.shells import PERSISTENT
from swe_srl.errors import TrajectoryFormatError
from swe_srl.trajectories.schema import Trajectory

FORMAT = "2"
SHARED = ("header", "trajectory", "oracle")
_ELIDED = f"OBSERVATION:\n{OBSERVATION_ELIDED}"


def header_record(**options: Any) -> dict[str, Any]:
    return {"kind": "header", "format": FORMAT, **options}


def trajectory_record(
    traj: Trajectory, ref: int, observation_chars: int, history_thoughts: bool
) -> dict[str, Any]:
    """A trajectory as stored once: observations cut as the prompts show them (see :func:`history_messages`)."""
    record = {
        "kind": "trajectory",
        "ref": ref,
        "instance_id": traj.instance_id,
        "trajectory_hash": traj.content_hash(),
        "problem": traj.problem,
        "actions": [s.action for s in traj.steps],
        "observations": [truncate_observation(s.observation.rstrip(), observation_chars) for s in traj.steps],
    }
    if history_thoughts:
        record["thoughts"] = [s.thought for s in traj.steps]
    if traj.shell != PERSISTENT:  # the system prompt says how its agent ran commands
        record["shell"] = traj.shell
    return record


def history_messages(record: Mapping[str, Any]) -> list[dict[str, str]]:
    """``build_messages`` of the whole trajectory (no oracle files): sample k's prompt is its first 2 + 2k messages.

    Observations are stored cut, so they are not cut again (``observation_chars=0``): the same text as
    ``build_messages`` with the header's ``observation_chars`` gives for the raw observations."""
    history = list(zip(record["actions"], record["observations"], strict=True))
    shell = record.get("shell", PERSISTENT)
    return build_messages(
        record["problem"], history, observation_chars=0, thoughts=record.get("thoughts"), shell=shell
    )


def problem_message(problem: str, files: Mapping[str, str] | None) -> dict[str, str]:
    return {"role": "user", "content": format_problem(problem, files or None)}


def prompt_of(
    history: list[dict[str, str]], problem: dict[str, str], step: int, window: int | None = None
) -> list[dict[str, str]]:
    """Sample ``step``'s unfitted prompt: system, problem (with its oracle files), then steps 0..step-1, or only the
    last ``window`` of them, as :func:`~swe_srl.core.prompts.window_messages` shows them."""
    omitted = max(0, step - window) if window is not None else 0
    if omitted:
        problem = {"role": problem["role"], "content": problem["content"] + omitted_note(omitted)}
    return [dict(history[0]), dict(problem), *(dict(m) for m in history[2 + 2 * omitted : 2 + 2 * step])]


def encode_fit(prompt: list[dict[str, str]], fitted: list[dict[str, str]]) -> Any:
    """What the fitter changed, compactly: ``{"drop": d, "edits": [[i, edit], ...]}`` (the first ``d`` step pairs
    dropped; message i of the result replaced: ``"e"`` an elided observation, ``[n, s]`` the first n characters of
    the message it replaces plus ``s``, or a string). None when nothing changed; ``{"prompt": fitted}`` when the
    result has another shape."""
    if fitted == prompt:
        return None
    drop = (len(prompt) - len(fitted)) // 2
    kept = prompt[:2] + prompt[2 + 2 * drop :]
    edits: list[list[Any]] = []
    if len(kept) == len(fitted):
        for index, (old, new) in enumerate(zip(kept, fitted, strict=True)):
            if new != old:
                edits.append([index, _edit(old["content"], new["content"])])
        fit = {"drop": drop, "edits": edits}
        if apply_fit(prompt, fit) == fitted:
            return fit
    return {"prompt": fitted}


def _edit(old: str, new: str) -> Any:
    if new == _ELIDED:
        return "e"
    lo, hi = 0, min(len(old), len(new))  # the longest common prefix, by bisection (startswith runs in C)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if new.startswith(old[:mid]) else (lo, mid - 1)
    shared = lo
    return [shared, new[shared:]] if shared > len(new) // 2 else new


def apply_fit(prompt: list[dict[str, str]], fit: Any) -> list[dict[str, str]]:
    """The fitted prompt from the unfitted one and :func:`encode_fit`'s record."""
    if not fit:
        return prompt
    if "prompt" in fit:
        return [{"role": str(m["role"]), "content": str(m["content"])} for m in fit["prompt"]]
    out = prompt[:2] + prompt[2 + 2 * int(fit["drop"]) :]
    for index, edit in fit["edits"]:
        old = out[index]["content"]
        content = _ELIDED if edit == "e" else old[: edit[0]] + edit[1] if isinstance(edit, list) else edit
        out[index] = {"role": out[index]["role"], "content": content}
    return out


def _delta(base: str, text: str) -> list[Any] | None:
    """``text`` as line ranges of ``base`` and new text, or None when that saves less than a fifth."""
    old, new = base.splitlines(keepends=True), text.splitlines(keepends=True)
    ops: list[Any] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            ops.append([i1, i2])
        elif j2 > j1:
            ops.append("".join(new[j1:j2]))
    size = sum(len(op) if isinstance(op, str) else 12 for op in ops)
    return ops if size < 0.8 * len(text) else None


def _undelta(base: str, ops: list[Any]) -> str:
    lines = base.splitlines(keepends=True)
    return "".join(op if isinstance(op, str) else "".join(lines[op[0] : op[1]]) for op in ops)


def _oracle_files(
    where: str, record: Mapping[str, Any], oracles: dict[tuple[str, str], dict[str, str]]
) -> dict[str, str]:
    setting, files = str(record.get("oracle")), {}
    for path, value in dict(record["files"]).items():
        if isinstance(value, dict):
            base = oracles.get((str(value.get("from")), setting), {}).get(path)
            if base is None:
                raise TrajectoryFormatError(f"{where}: {path} is a delta of a file no earlier record holds")
            value = _undelta(base, value["ops"])
        files[path] = value
    return files


def history_window(where: str, header: Mapping[str, Any]) -> int | None:
    """The header's ``history`` (K), or None when it has none; anything but a whole number >= 0 is an error."""
    window = header.get("history")
    if window is not None and (not isinstance(window, int) or isinstance(window, bool) or window < 0):
        raise TrajectoryFormatError(f"{where}: header 'history' must be a whole number >= 0, got {window!r}")
    return window


def expand(records: Iterable[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Sample rows with their ``prompt`` built, from ``(where, record)`` pairs of a format-2 file (samples may come
    before the records they name; a delta's base record comes before it; the header's ``history`` windows every
    prompt).

    Rows hold the keys of a format-1 sample (``prompt``, ``expert_action``, ``expert_thought``, ``instance_id``,
    ``step``, ``num_steps``, ``trajectory_hash``, ``split``, ``oracle_files``) and ``oracle``. Errors name the line.
    """
    trajectories: dict[Any, dict[str, Any]] = {}
    oracles: dict[tuple[str, str], dict[str, str]] = {}
    samples = []
    window = None
    for where, record in records:
        kind = record.get("kind")
        if kind == "header":
            window = history_window(where, record)
        elif kind == "trajectory":
            trajectories[record.get("ref")] = record
        elif kind == "oracle":
            key = (str(record.get("instance_id")), str(record.get("oracle")))
            oracles[key] = _oracle_files(where, record, oracles)
        elif kind == "sample":
            samples.append((where, record))
        else:
            raise TrajectoryFormatError(f"{where}: unknown record kind {kind!r}")
    histories: dict[Any, list[dict[str, str]]] = {}
    problems: dict[tuple[Any, str], dict[str, str]] = {}
    rows = []
    for where, sample in samples:
        ref, setting, step = sample.get("traj"), str(sample.get("oracle") or "none"), sample.get("step")
        if ref not in trajectories:
            raise TrajectoryFormatError(
                f"{where}: sample names trajectory {ref!r}, which the file does not hold"
            )
        trajectory = trajectories[ref]
        if not isinstance(step, int) or not 0 <= step < len(trajectory["actions"]):
            raise TrajectoryFormatError(f"{where}: step {step!r} is not a step of trajectory {ref!r}")
        files = None
        if setting != "none":
            files = oracles.get((str(sample.get("instance_id")), setting))
            if files is None:
                raise TrajectoryFormatError(
                    f"{where}: no {setting!r} oracle files of {sample.get('instance_id')!r} in the file"
                )
        if ref not in histories:
            histories[ref] = history_messages(trajectory)
        if (ref, setting) not in problems:
            problems[(ref, setting)] = problem_message(trajectory["problem"], files)
        prompt = prompt_of(histories[ref], problems[(ref, setting)], step, window)
        prompt = apply_fit(prompt, sample.get("fit"))
        rows.append(
            {
                "prompt": prompt,
                **{k: v for k, v in sample.items() if k not in ("kind", "traj", "fit")},
                "oracle": setting,
                "oracle_files": list(files or {}),
            }
        )
    return rows


@dataclass
class SampleFile:
    """A samples file in memory: the header, then trajectory, oracle and sample records in the order written
    (each shared record before the samples that use it)."""

    header: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    _refs: int = 0
    _latest: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    """(setting, path) → (instance_id, text) of the latest oracle record holding that file: the base of deltas."""

    def add_trajectory(
        self, traj: Trajectory, observation_chars: int, history_thoughts: bool
    ) -> dict[str, Any]:
        record = trajectory_record(traj, self._refs, observation_chars, history_thoughts)
        self._refs += 1
        self.records.append(record)
        return record

    def add_oracle(self, instance_id: str, setting: str, files: Mapping[str, str]) -> None:
        """An ``oracle`` record; a file much like the same path of an earlier record is stored as a delta."""
        stored: dict[str, Any] = {}
        for path, text in files.items():
            stored[path] = text
            if (setting, path) in self._latest:
                base_id, base = self._latest[(setting, path)]
                ops = _delta(base, text)
                if ops is not None:
                    stored[path] = {"from": base_id, "ops": ops}
            self._latest[(setting, path)] = (instance_id, text)
        self.records.append(
            {"kind": "oracle", "instance_id": instance_id, "oracle": setting, "files": stored}
        )

    @property
    def samples(self) -> list[dict[str, Any]]:
        """The sample records (compact: no ``prompt``)."""
        return [r for r in self.records if r["kind"] == "sample"]

    def __len__(self) -> int:
        return sum(1 for r in self.records if r["kind"] == "sample")

    def text(self) -> str:
        """The JSONL text: one record a line, the header first."""
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in (self.header, *self.records))

    def rows(self) -> list[dict[str, Any]]:
        """The samples with their prompts, exactly as reading the written file gives them."""
        return expand((f"record {n}", r) for n, r in enumerate((self.header, *self.records)))

    def expanded_text(self) -> str:
        """The self-contained file (``--expand``): a header (format 1, ``expanded``), then one line per sample with
        its ``messages`` (the prompt, without the target) and the fields of :meth:`rows`."""
        header = {**self.header, "format": "1", "expanded": True}
        lines = [header, *({"messages": row.pop("prompt"), **row} for row in self.rows())]
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines)

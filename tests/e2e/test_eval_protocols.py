"""`swe-srl eval --protocol oracle-edit|agentless` end to end through the real CLI and the real OpenAI client: a
local server answering with the gold patch as SEARCH/REPLACE (and localization with the gold files) resolves what
the gold patch resolves on the bundled test tasks; bad answers end unresolved with their reason, never as errors;
the tiny HF model runs both protocols (plumbing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from chat_stub import serving

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docker"))

pytestmark = [pytest.mark.e2e, pytest.mark.docker]
PROTOCOLS = ("oracle-edit", "agentless")


def _eval(*args: str, out: Path, timeout: float = 900) -> dict:
    cmd = [sys.executable, "-m", "swe_srl.cli", "eval", *args, "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads((out / "report.json").read_text())


def _results(out: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}


def _gold_server(instances):
    """Answers each prompt with the gold answer of the instance whose problem statement it holds (and, for a repair
    prompt, whose base files: bundled tasks may share a problem statement)."""
    from swe_srl.eval.protocols.gold import gold_answer
    from swe_srl.eval.protocols.prompts import is_localization
    from swe_srl.eval.protocols.sources import BaseTree, oracle_files

    trees = {i.instance_id: BaseTree(i) for i in instances}

    def shown(instance, prompt: str) -> bool:
        files = trees[instance.instance_id].contents(oracle_files(instance))
        return all(text.rstrip("\n") in prompt for text in files.values())

    def answer(request: dict) -> str:
        prompt = request["messages"][-1]["content"]
        held = [i for i in instances if i.problem_statement in prompt]
        if not is_localization(request["messages"]):
            held = [i for i in held if shown(i, prompt)]
        instance = max(held, key=lambda i: len(i.problem_statement))
        return gold_answer(request["messages"], instance, trees[instance.instance_id])

    return serving(answer, usage=True)


def test_gold_as_search_replace_resolves_what_gold_resolves_on_bundled_test(
    docker_engine, tmp_path: Path
) -> None:
    from swe_srl.benchmark.instances import load_instances

    instances = load_instances("bundled:test")
    assert instances, "the bundled suite has no test-split task"
    direct = _eval("--policy", "gold", "--direct-patch", "--dataset", "bundled:test", "--workers", "2",
                   out=tmp_path / "direct")  # fmt: skip
    assert direct["resolved"] > 0
    for protocol in PROTOCOLS:
        out = tmp_path / protocol
        with _gold_server(instances) as server:
            args = ["--policy", "openai", "--base-url", server.url, "--model", "gold-sr", "--protocol", protocol,
                    "--dataset", "bundled:test", "--workers", "2"]  # fmt: skip
            if protocol == "oracle-edit":  # generated without grading, then graded from its predictions
                args.append("--no-grade")
            report = _eval(*args, out=out)
            assert len(server.requests) == len(instances) * (2 if protocol == "agentless" else 1)
            assert all(r["max_tokens"] == 4096 and r["temperature"] == 0.0 for r in server.requests)
            again = _eval(*args, out=out)  # resume: nothing is asked again
            assert again["resumed"] == len(instances) and len(server.requests) == len(instances) * (
                2 if protocol == "agentless" else 1
            )
        if protocol == "oracle-edit":
            assert report["statuses"] == {"generated": len(instances)} and report["resolved"] == 0
            report = _eval("--policy", f"predictions:{out / 'predictions.jsonl'}", "--protocol", protocol,
                           "--dataset", "bundled:test", "--workers", "2", out=tmp_path / "graded")  # fmt: skip
            out = tmp_path / "graded"
        assert report["resolved_ids"] == direct["resolved_ids"], protocol
        assert report["errors"] == [] and report["protocol"] == protocol
        assert report["oracle"] == ("whole" if protocol == "oracle-edit" else "none")
        assert report["published"]["status"] == "published" and len(report["published"]["rows"]) == 3
        low, high = report["resolved_rate_ci95"]
        assert low <= report["resolved_rate"] <= high
        summary = report["protocol_summary"]
        assert summary["prompt_tokens"] > 0 and summary["completion_tokens"] > 0
        assert set(summary["tokens_per_instance"]) == {i.instance_id for i in instances}
        predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
        assert {p["model_name_or_path"] for p in predictions} == {"gold-sr"} and len(predictions) == len(
            instances
        )


def _edit(path: str, search: str, replace: str) -> str:
    return f"```python\n### {path}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n```"


BAD_ANSWERS = {  # kind: (protocol, the served answer, the reason's start, more options)
    "malformed": ("oracle-edit", "```python\n### calc.py\n<<<<<<< SEARCH\nreturn a\n```", "unreadable", []),
    "no-match": ("oracle-edit", _edit("calc.py", "not there\n", "x = 1\n"), "no edit applied", []),
    "twice": (
        "oracle-edit",
        _edit("calc.py", "\n\n", "\n\n\n"),
        "no edit applied",
        ["--edit-rules", "strict"],
    ),
    "test-file": (
        "oracle-edit",
        _edit("test_neg.py", "", "x = 1\n"),
        "no edit applied",
        ["--edit-rules", "strict"],
    ),
    "outside": (
        "oracle-edit",
        _edit("../calc.py", "", "x = 1\n"),
        "no edit applied",
        ["--edit-rules", "strict"],
    ),
    "not-shown": ("oracle-edit", _edit("test_neg.py", "x\n", "x = 1\n"), "no edit of a localized file", []),
    "missing-files": ("agentless", "```\nsrc/calc.py\nnowhere.py\n```", "the localization named no", []),
}


@pytest.mark.parametrize("kind", list(BAD_ANSWERS))
def test_bad_answers_end_unresolved_with_their_reason(kind: str, tiny: Path, tmp_path: Path) -> None:
    from swe_srl.benchmark.instances import load_instances

    protocol, answer, reason, more = BAD_ANSWERS[kind]
    instance = load_instances(str(tiny))[0]
    with serving(lambda request: answer) as server:
        report = _eval("--policy", "openai", "--base-url", server.url, "--model", "m", "--protocol", protocol,
                       "--dataset", str(tiny), "--instances", instance.instance_id, *more, out=tmp_path)  # fmt: skip
    record = _results(tmp_path)[instance.instance_id]
    assert record["status"] == "unresolved" and report["errors"] == [] and record["model_patch"] == ""
    assert record["exit_reason"] == "no_patch" and record["protocol"]["reason"].startswith(reason)
    if kind in ("twice", "test-file", "outside", "not-shown", "missing-files"):
        assert record["protocol"]["notes"], record["protocol"]


def test_tiny_model_runs_both_protocols(tiny: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.eval.protocols.prompts import repair_messages
    from swe_srl.train.tiny.model import make_tiny_policy

    instance = load_instances(str(tiny))[0]
    texts = [
        m["content"] for m in repair_messages(instance.problem_statement, {"calc.py": "def add(a, b):\n"})
    ]
    model = make_tiny_policy(texts, tmp_path / "tiny-model")
    for protocol in PROTOCOLS:
        out = tmp_path / protocol
        report = _eval("--policy", f"hf:{model}", "--protocol", protocol, "--dataset", str(tiny), "--instances",
                       instance.instance_id, "--max-new-tokens", "24", out=out)  # fmt: skip
        record = _results(out)[instance.instance_id]
        assert report["errors"] == [] and record["status"] in ("resolved", "unresolved")
        assert record["protocol"]["prompt_tokens"] > 0 and 1 <= record["steps"] <= (
            1 + (protocol == "agentless")
        )
        if record["steps"] == 1 and protocol == "agentless":  # the localization named nothing usable
            assert record["protocol"]["reason"].startswith("the localization named no")

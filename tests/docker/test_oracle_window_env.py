"""SWEEnv's oracle setting in a real container: whole files by default (SWE-bench's oracle setting), windows around
the gold patch's hunks with ``oracle_window``; the prompt and ``info["oracle_files"]`` agree."""

from __future__ import annotations

import pytest

from swe_srl.benchmark.instances import load_instances
from swe_srl.core.prompts import build_messages
from swe_srl.trajectories.oracle import oracle_contents, oracle_windows

pytestmark = pytest.mark.docker


def test_oracle_files_whole_by_default_and_windows_on_request(docker_engine, tmp_path) -> None:
    from agent_tasks import make_tiny_dataset

    from swe_srl.env.swe_env import SWEEnv
    from swe_srl.infra.recipes import instance_image

    instance = load_instances(str(make_tiny_dataset(tmp_path)))[0]
    instance_image(instance)
    whole = oracle_contents([instance])[instance.instance_id]
    for window, expected in ((None, whole), (0, oracle_windows(instance, whole, 0))):
        env = SWEEnv(instances=[instance], oracle_files=True, oracle_window=window)
        try:
            _, info = env.reset(options={"instance_id": instance.instance_id})
        finally:
            env.close()
        assert info["oracle_files"] == expected
        assert info["messages"] == build_messages(instance.problem_statement, [], oracle_files=expected)
    assert expected != whole and "omitted ...]" in expected["calc.py"]


def test_eval_report_names_the_oracle_setting(docker_engine, tmp_path) -> None:
    import json

    from agent_tasks import make_tiny_dataset

    from swe_srl.eval.run import evaluate
    from swe_srl.eval.settings import EvalSettings

    instance = load_instances(str(make_tiny_dataset(tmp_path / "tasks")))[0]
    for settings, label in (
        (EvalSettings("gold", direct=True), "none"),
        (EvalSettings("gold", direct=True, oracle_files=True), "whole"),
        (EvalSettings("gold", direct=True, oracle_files=True, oracle_window=3), "window:3"),
    ):
        out = tmp_path / label.replace(":", "-")
        report = evaluate(settings, [instance], out)
        assert report["oracle"] == label == json.loads((out / "report.json").read_text())["oracle"]

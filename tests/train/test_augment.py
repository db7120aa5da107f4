"""Renamed copies of training samples (swe_srl.train.tiny.augment): test names renamed consistently, nothing else."""

from __future__ import annotations

import random

from swe_srl.train.config import TinyOptions
from swe_srl.train.tiny import augment
from swe_srl.train.tiny.augment import (
    TEST_NAME,
    library_names,
    name_words,
    pool_names,
    pooled_copies,
    rename_tests,
    renamed_copies,
    stdlib_names,
    swap_library_names,
    swapped_libraries,
)
from swe_srl.train.tiny.model import warmup_rows

SYSTEM = {"role": "system", "content": "Run test_suite_style commands; test_get is a word here."}


def _row(test: str = "test_get") -> dict:
    problem = (
        f"<problem_statement>\nRegression in toolz: {test} fails\n\n```\n"
        f"toolz/tests/test_itertoolz.py::{test}: AssertionError\n```\n</problem_statement>\n\n"
        '<file path="toolz/itertoolz.py">\n 10| def get(ind, seq):\n</file>'
    )
    return {
        "prompt": [
            SYSTEM,
            {"role": "user", "content": problem},
            {
                "role": "assistant",
                "content": f"```bash\npython -m pytest -q toolz/tests/test_itertoolz.py::{test}\n```",
            },
            {
                "role": "user",
                "content": f"OBSERVATION:\nFAILED toolz/tests/test_itertoolz.py::{test} - x\ntest_getter ok",
            },
        ],
        "expert_action": f"python -m pytest -x -q toolz/tests/test_itertoolz.py::{test}",
        "instance_id": "toolz__toolz-m001",
        "step": 1,
    }


def test_rename_is_consistent_everywhere_but_the_system_prompt():
    row = _row()
    copy = rename_tests(row, random.Random(0), ["merge", "sorted", "curry"])
    assert copy is not None
    new_test, new_file = copy["renamed"]["test_get"], copy["renamed"]["test_itertoolz"]
    assert {new_test, new_file}.isdisjoint({"test_get", "test_itertoolz"}) and new_test != new_file
    assert copy["expert_action"] == f"python -m pytest -x -q toolz/tests/{new_file}.py::{new_test}"
    problem, history, observation = (m["content"] for m in copy["prompt"][1:])
    assert f"{new_test} fails" in problem and f"{new_file}.py::{new_test}: AssertionError" in problem
    assert f"::{new_test}\n```" in history and f"::{new_test} - x" in observation
    # words that only contain the old name, and the system prompt, stay as they were
    assert "test_getter ok" in observation and copy["prompt"][0] == SYSTEM
    assert "def get(ind, seq)" in problem
    assert row["expert_action"].endswith("test_itertoolz.py::test_get")  # the original is untouched


def test_no_test_in_the_problem_means_no_copy():
    row = _row()
    row["prompt"][1] = {
        "role": "user",
        "content": "<problem_statement>\nget() is wrong\n</problem_statement>",
    }
    assert rename_tests(row, random.Random(0), ["merge"]) is None
    assert renamed_copies([row], copies=3) == [row]


def test_copies_are_deterministic_and_drawn_from_the_rows_own_words():
    rows = [_row("test_get"), _row("test_merge_sorted"), _row("test_curry_call")]
    words = name_words(rows)
    assert words == ["call", "curry", "get", "itertoolz", "merge", "sorted"]
    out = renamed_copies(rows, copies=2, seed=3)
    assert out[:3] == rows and len(out) == 9
    assert out == renamed_copies(rows, copies=2, seed=3)
    for copy in out[3:]:
        for name in copy["renamed"].values():
            assert TEST_NAME.fullmatch(name) and set(name[5:].split("_")) <= set(words)
    assert renamed_copies(rows, copies=0) == rows


def test_warmup_renamed_copies_train_on_the_renamed_samples():
    """With ``tiny.warmup_renamed_copies`` the warm-up's data holds the renamed copies: after the same steps from the
    same init, their targets (the renamed test ids) are fitted far better than by a warm-up on the originals."""
    import torch

    from swe_srl.train.sft import completion_nll, pad_left, target_batch
    from swe_srl.train.tiny import model as tiny

    rows = [_row(name) for name in ("test_get", "test_merge_sorted", "test_curry_call", "test_pluck")]
    options = TinyOptions(hidden_size=32, layers=2, heads=2, vocab_size=300, max_prompt_tokens=256, seed=5)
    copies = renamed_copies(rows, 2, seed=options.seed)[len(rows) :]  # what the warm-up draws
    assert len(copies) == 8
    tokenizer = tiny.build_tokenizer(tiny.sample_texts(rows), options.vocab_size)
    examples = tiny.warmup_examples(copies, tokenizer, 256, options.warmup_target_tokens)
    prompts = pad_left([p for p, _ in examples], tokenizer.pad_token_id)
    mask = pad_left([[1] * len(p) for p, _ in examples], 0)
    batch = target_batch([t for _, t in examples], tokenizer.pad_token_id)
    nll = {}
    for n in (0, 2):
        model = tiny.build_model(tokenizer, options)
        opts = options.model_copy(update={"warmup_steps": 120, "warmup_renamed_copies": n})
        assert len(tiny.format_warmup(model, tokenizer, rows, opts)) == 120
        with torch.no_grad():
            nll[n] = completion_nll(model.eval(), prompts, mask, **batch).item()
    assert nll[2] < nll[0] - 0.3, nll


def test_format_warmup_reports_each_step_and_takes_a_rate_factor():
    """``on_step`` sees every step (1-based) with its loss; ``lr_factor`` replaces the ramp (0: no update at all)."""
    import torch

    from swe_srl.train.tiny import model as tiny

    rows = [_row(name) for name in ("test_get", "test_pluck")]
    options = TinyOptions(
        hidden_size=32, layers=2, heads=2, vocab_size=300, max_prompt_tokens=256, warmup_steps=3
    )
    tokenizer = tiny.build_tokenizer(tiny.sample_texts(rows), options.vocab_size)
    model = tiny.build_model(tokenizer, options)
    seen: list[tuple[int, float]] = []
    losses = tiny.format_warmup(
        model, tokenizer, rows, options, on_step=lambda s, loss: seen.append((s, loss))
    )
    assert seen == list(enumerate(losses, start=1)) and len(seen) == 3
    before = [p.detach().clone() for p in model.parameters()]
    tiny.format_warmup(model, tokenizer, rows, options, lr_factor=lambda step: 0.0)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def _parse_row() -> dict:
    problem = "<problem_statement>\nparse() drops the width of {:>5d}\n</problem_statement>\n\n" + (
        '<file path="parse.py">\n 10| def _handle_field(self, field):\n</file>'
    )
    return {
        "prompt": [SYSTEM, {"role": "user", "content": problem}],
        "expert_action": 'grep -rn "def _handle_field" --include="*.py" .',
        "instance_id": "parse__parse-m003",
        "step": 0,
    }


def _rows() -> list[dict]:
    grep = {**_row(), "expert_action": 'grep -rn "def get" toolz --include="*.py"'}
    return [_row(), grep, _parse_row()]


def test_library_names_are_those_only_one_repository_writes():
    rows = _rows()
    own = library_names(rows)
    assert {"toolz", "tests", "test_itertoolz", "test_get"} <= own["toolz__toolz"]
    assert "_handle_field" in own["parse__parse"]
    # shared shell words are no library's, nor are Python's own (def): len < 3 words (py) never count
    shared = own["toolz__toolz"] & own["parse__parse"]
    assert not shared and "python" in own["toolz__toolz"]  # only toolz's action runs python here
    assert "def" not in own["parse__parse"] and "grep" not in own["parse__parse"]
    assert library_names([_row()]) == {}  # one library: nothing tells its names from the shell's
    no_ids = [{k: v for k, v in row.items() if k != "instance_id"} for row in rows]
    assert library_names(no_ids) == {} and swapped_libraries(no_ids, 1.0) == no_ids  # samples without ids


def test_swapped_names_come_from_the_other_library_one_to_one():
    rows = _rows()
    own = library_names(rows)
    assert own["parse__parse"] == {"_handle_field"}  # grep and include are both libraries'
    copy = swap_library_names(rows[2], random.Random(0), own)
    new = copy["renamed"]["_handle_field"]
    assert new in own["toolz__toolz"] and new not in own["parse__parse"]
    assert copy["expert_action"] == f'grep -rn "def {new}" --include="*.py" .'
    assert f"def {new}(self, field)" in copy["prompt"][1]["content"]
    assert copy["prompt"][0] == SYSTEM and rows[2]["expert_action"].endswith(
        '"def _handle_field" --include="*.py" .'
    )
    assert len(set(copy["renamed"].values())) == len(copy["renamed"])
    # the share: none, all, and the rows themselves otherwise untouched
    assert swapped_libraries(rows, 0.0) == rows
    assert all("renamed" in r for r in swapped_libraries(rows, 1.0, seed=3))


def test_pool_names_come_from_the_standard_library_one_to_one():
    rows = _rows()
    own, pools = library_names(rows), stdlib_names()
    assert "test_tokenize" in pools[True] and "urlparse" in pools[False] and "print" not in pools[False]
    copy = pool_names(rows[0], random.Random(0), own)
    renamed = copy["renamed"]
    assert renamed["test_get"] in pools[True] and renamed["toolz"] in pools[False]
    assert len(set(renamed.values())) == len(renamed)  # one to one
    new_path = f"{renamed['toolz']}/{renamed['tests']}/{renamed['test_itertoolz']}.py::{renamed['test_get']}"
    python, pytest = renamed["python"], renamed["pytest"]  # only toolz's action runs them in these rows
    assert copy["expert_action"] == f"{python} -m {pytest} -x -q {new_path}"
    assert new_path in copy["prompt"][1]["content"] and copy["prompt"][0] == SYSTEM
    # fresh names in every copy; the pool option of the SRL swap draws from the same pool
    copies = pooled_copies(rows, 2, seed=1)
    assert copies[:3] == rows and len(copies) == 9
    assert copies[3]["renamed"] != copies[6]["renamed"]
    swapped = swapped_libraries(rows, 1.0, seed=3, pool="stdlib")
    assert all(set(r["renamed"].values()) <= set(pools[True]) | set(pools[False]) for r in swapped)
    # the warm-up's swap draws from the pool its option names (train unless asked)
    options = TinyOptions(warmup_swap=1.0, seed=3)
    assert warmup_rows(rows, options) == swapped_libraries(rows, 1.0, seed=3, pool="train")
    stdlib = warmup_rows(rows, options.model_copy(update={"warmup_swap_pool": "stdlib"}))
    assert stdlib == swapped and stdlib != warmup_rows(rows, options)
    assert warmup_rows(rows, TinyOptions()) == rows  # the default warm-up: the samples as they are


def test_a_pool_smaller_than_the_samples_names_maps_what_it_can(monkeypatch):
    rows = _rows()
    own = library_names(rows)
    monkeypatch.setattr(augment, "stdlib_names", lambda: {True: ("test_only",), False: ("alpha", "toolz")})
    renamed = pool_names(rows[0], random.Random(0), own)["renamed"]
    # one test name and one other name were free ("toolz" is the sample's own): the rest keep their names
    assert sorted(renamed.values()) == ["alpha", "test_only"] and len(renamed) == 2

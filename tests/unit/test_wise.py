"""WiSE-FT's weight mix (swe_srl.train.wise): exact at both ends and in between, dtypes and integer buffers kept."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from swe_srl.train.wise import apply_wise, mixed_state, snapshot  # noqa: E402


def _model() -> torch.nn.Module:
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    model.register_buffer("seen", torch.tensor([7]))  # an integer buffer: never mixed
    return model


def test_mix_is_start_at_zero_trained_at_one_and_linear_between():
    model = _model()
    start = snapshot(model)
    assert "seen" not in start and all(not v.requires_grad for v in start.values())
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)
        model.seen.fill_(9)
    trained = {k: v.clone() for k, v in model.state_dict().items()}
    for share in (0.0, 0.25, 0.5, 1.0):
        mixed = mixed_state(start, trained, share)
        for key, value in start.items():
            torch.testing.assert_close(mixed[key], value + share)  # every trained weight moved by exactly 1
        assert torch.equal(mixed["seen"], torch.tensor([9]))
    apply_wise(model, start, 0.5)
    for key, value in start.items():
        torch.testing.assert_close(model.state_dict()[key], value + 0.5)
    apply_wise(model, start, 1.0)  # 1 leaves the model as it is
    for key, value in start.items():
        torch.testing.assert_close(model.state_dict()[key], value + 0.5)


def test_mix_keeps_the_trained_dtype():
    model = _model().to(torch.bfloat16)
    start = snapshot(model)
    trained = {k: v + 1 if v.is_floating_point() else v for k, v in model.state_dict().items()}
    mixed = mixed_state(start, trained, 0.5)
    assert all(mixed[k].dtype == trained[k].dtype for k in trained)

"""Opening PATH (and the files given with it) as a :class:`~swe_srl.view.site.Site`: the kind is detected, each
extra file must be of the kind its option names, and bad input stops with one line before any page is served."""

from __future__ import annotations

from pathlib import Path

from swe_srl.errors import ConfigError
from swe_srl.view.detect import detect
from swe_srl.view.evalrun import EvalRun
from swe_srl.view.samples import Samples
from swe_srl.view.site import Site
from swe_srl.view.trainrun import SeedsRun, TrainRun
from swe_srl.view.trajfile import Trajectories, read_replay


def open_site(
    path: Path,
    *,
    trajectories: Path | None = None,
    samples: Path | None = None,
    train: Path | None = None,
    replay: Path | None = None,
    dataset: str | None = None,
) -> Site:
    """The site of ``path`` with ``--trajectories``, ``--samples``, ``--train`` (a training run whose held-out rows
    the other pages link to) and ``--replay`` (``swe-srl replay --out``)."""
    for option, value, kind in (
        ("--trajectories", trajectories, "trajectories"),
        ("--samples", samples, "samples"),
    ):
        if value is not None and detect(value) != kind:
            raise ConfigError(f"{option} {value}: a {detect(value)} path, not a {kind} file")
    if replay is not None and not Path(replay).is_file():
        raise ConfigError(f"--replay {replay}: no such file (swe-srl replay --out writes it)")
    rows = read_replay(replay) if replay else {}
    kind = detect(path)
    if kind == "eval":
        main = EvalRun(path, dataset=dataset, replay=rows)
    elif kind == "train":
        main = TrainRun(path)
    elif kind == "seeds":
        main = SeedsRun(path)
    elif kind == "trajectories":
        main = Trajectories(path, replay=rows)
    else:
        main = Samples(path)
    extras = [Trajectories(trajectories, replay=rows)] if trajectories else []
    extras += [Samples(samples)] if samples else []
    if train is not None:
        if detect(train) not in ("train", "seeds"):
            raise ConfigError(f"--train {train}: a {detect(train)} path, not a training run folder")
        extras.append(TrainRun(train) if detect(train) == "train" else SeedsRun(train))
    return Site(main, extras)

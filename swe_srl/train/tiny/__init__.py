"""The embedded tiny CPU demo model (``--model tiny``, the default) and everything only it needs: its model and
tokenizer built in-process with a format warm-up (:mod:`.model`, :mod:`.induction`), its start (:mod:`.start`: the
warm-up split, the name swaps of :mod:`.augment`, its CPU runtime :mod:`.cpu`), its slotted names (:mod:`.slots`)
and its defaults, the ``cpu-tiny`` preset (:mod:`.preset`)."""

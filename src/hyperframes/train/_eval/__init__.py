"""The eval room: a checkpoint or a model scored on a store.

:mod:`._predict` runs a model over a loader (on every process of a DDP run, gathered);
:mod:`._eval` is :func:`~hyperframes.train.evaluate` (clips and crops per video, metrics of
the checkpoint's task), :mod:`._eval_table` its printed table, :mod:`._recalibrate`
re-estimates a model's BatchNorm statistics, :mod:`._reconstructions` writes a masked-video
checkpoint's pictures. Below it: the config and tasks rooms and :mod:`.._dist`; above it: the
loop (its validation hook calls :func:`~._eval.evaluate`).
"""

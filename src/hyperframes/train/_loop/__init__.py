"""The loop room: a training run.

:mod:`._trainer` is :func:`~hyperframes.train.run_training`: it assembles the run's parts
(:mod:`._parts`, :mod:`._setup`: model, optimizer, data), restores a resumed run
(:mod:`._restore`, :mod:`._resume`, :mod:`._state`) and runs the epoch loop (:mod:`._loop`):
the step (:mod:`._step`, with :mod:`._schedule`), the hooks that validate, checkpoint, log and
stop (:mod:`._hooks`, :mod:`._logging`, :mod:`._mlflow`, :mod:`._stopping`), the keyframe
models' recipe (:mod:`._keyframe_recipe`). :mod:`._estimate` measures a config's cost before
a run. The top room: it imports eval, config, tasks and :mod:`.._dist`; none imports it.
"""

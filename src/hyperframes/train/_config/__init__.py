"""The config room: a training config read, checked and turned into datasets.

:mod:`._config` reads a YAML (bounded), applies ``--set`` overrides and checks each section
without torch (:func:`~._config.precheck_config`: the command line refuses a bad config
before importing it); :mod:`._checks` checks what needs the model, sampler and task
registries (a task's own checks through :meth:`~hyperframes.train.Task.check_config`);
:mod:`._load` runs both (:func:`~._load.load_config`). :mod:`._data` maps a config onto
datasets and loaders, :mod:`._splits` onto the store's videos, :mod:`._leakage` checks the
split for shared content, :mod:`._frames` / :mod:`._frame_config` the frame options.

Below it: the tasks room (:mod:`hyperframes.train._tasks`). Above it: eval and loop. This
``__init__`` imports nothing, so reading a config loads none of the heavy modules.
"""

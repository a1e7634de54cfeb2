"""The private core: what several packages share, below all of them (torchcodec's ``_core``).

No package imports another package's ``_private`` module; what two packages both need lives
here, and the packages import it from here (``tests/test_layers.py`` checks both)::

    _errors     the exception tree (re-exported by ``hyperframes``)
    _atomic     crash-safe file writes
    _checksum   the checksum a checkpoint carries (every entry, tensors by their bytes)
    _signals    SIGTERM handled like Ctrl-C; exit statuses
    _fork       what a forked child must not touch: the parent's garbage, OpenCV's pool
    _progress   progress bars on stderr
    _sizes      frame sizes: ``"128"`` / ``"112x96"`` / ``"none"`` and the size they give
    _limits     upper bounds on what a config, checkpoint or store may ask for
    _layouts    how a window is arranged for a model (temporal, channel, conv3d, keyframe)
    _normalize  frames to float and per-channel normalisation (the contract and the dataset)
    _contract   the input contract: raw frames to a model's input, saved with the model
    _contract_checks  every check of the contract's fields (its records included), in one function
    _contract_extra  the decoder a store's manifest records, as the contract's record holds it
    _validate   settings as strict pydantic models; errors that name the key and what is allowed
    _change     per-frame visual change scores (the store computes, samplers read)
    _signature  perceptual video signatures (the store computes, the leakage check compares)
    _device     device and dtype resolution
    _pictures   a window of frames as a PNG; a feature map's principal components as RGB
    _plots      run plots (curves, confusion, bars)
    _urls       whether a store path is an object-storage URL (``s3://bucket/prefix``)
    _resize     crop + resize of frame planes with OpenCV (the batch pipeline, box reads, eval crop)
    _kernels    the optional C kernels of the batch transforms (uint8 affine warp, hue shift)
    _text       file names and labels made printable (control bytes escaped)
    _json       JSON from files: a document nesting too deep is our error naming the file
    _registry   names to entries, one helper under every registry (models, tasks, samplers, ...)
    _tasks      what each task is (its traits), for config checks, the contract, eval and predict
    _config_models  the training config's sections, as strict pydantic models
    _config_values  a (partial) config's values checked with a config file's bounds (train, checkpoints)
    _moved      names that left a public ``__all__``: importable still, warning where they live
    _yaml       the bounded YAML loader: size, depth and alias expansion checked

Importing a core module imports nothing from the packages above it; the few functions that
need them (the contract asks the store and the model registry) import their public
``__init__`` when called. Modules that need torch import it themselves (``_layouts``), so
``import hyperframes`` stays light.
"""

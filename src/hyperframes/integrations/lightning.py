"""``HyperframeDataModule``: a Lightning ``LightningDataModule`` over a store.

The options are those of a config's ``data`` section (``frames``, ``batch_size``, ``sampler``,
``sampler_options``, ``augmentation``, ``train_split``, ``val_split``, ``clips_per_video``,
``workers``...), checked by the same validation as ``hyperframes train`` (an unknown key or a
value out of range is a :class:`ConfigError` naming ``data.<key>``) and turned into datasets by
the same code (:func:`hyperframes.train._config._data.build_data`), so a Lightning run reads exactly the
windows a ``hyperframes train`` run of that config reads::

    import lightning as L
    from hyperframes.integrations.lightning import HyperframeDataModule

    dm = HyperframeDataModule("store", frames=8, batch_size=16, augmentation={"size": 112})
    L.Trainer(max_epochs=10).fit(model, datamodule=dm)
    # in the LightningModule: x = dm.contract.prepare(batch.frames); y = batch.labels

Batches are :class:`~hyperframes.data.HyperframeBatch` records of uint8 frames (B, T, C, H, W);
``dm.contract`` turns them into the model's input (float, normalised, in the model's layout
for ``model=``, a registered model name; default the config's).

**From the trainer**: the rank and world size (each rank reads its share of every epoch's
global order; Lightning's own distributed sampler is not used), and the epoch (the loader is
set to ``trainer.current_epoch`` each time Lightning starts iterating it).

**Resuming**: the training loader is stateful (``state_dict``/``load_state_dict``, the
position reached in the epoch's global order), so Lightning stores it in its checkpoints and a
fit resumed from a mid-epoch checkpoint reads the rest of that epoch, not the epoch again; the
data module's own ``state_dict()`` holds the same state for loops that save it themselves.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from typing import Any

from .._core._errors import ConfigError, install_command
from ..data import loader, read_state
from ..store import open_store
from ..train import (
    build_data,
    config_from_dict,
    load_config,
    loader_workers,
    make_dataset,
    resolve_split,
)

try:  # an optional extra: imported by this module, which only a Lightning user imports
    import lightning
except ImportError as e:
    raise ConfigError(
        f"hyperframes.integrations.lightning needs the 'lightning' package, which is not "
        f"importable here ({e}); install it with: {install_command('lightning')}"
    ) from None

__all__ = ["HyperframeDataModule"]


class _EpochLoader:
    """The training loader as Lightning iterates it: set to the trainer's epoch at each
    ``iter()``, unless a restored state continues that epoch; stateful; its length is the full
    epoch's (Lightning counts the batches of a resumed epoch from where it stopped)."""

    def __init__(self, module: HyperframeDataModule, loader) -> None:
        self.module = module
        self.loader = loader
        self._pending: dict | None = None

    def _epoch(self) -> int:
        trainer = self.module.trainer
        return (
            int(trainer.current_epoch) if trainer is not None else self.loader.sampler.inner.epoch
        )

    def __iter__(self) -> Iterator:
        epoch, state, self._pending = self._epoch(), self._pending, None
        finished = state is not None and state["samples_yielded"] >= state["epoch_length"]
        if state is not None and state["epoch"] == epoch and not finished:
            self.loader.load_state_dict(state)
        else:  # a fresh epoch (or the saved one was complete: Lightning moved on)
            self.loader.set_epoch(epoch)
        return iter(self.loader)

    def __len__(self) -> int:
        inner = self.loader.sampler.inner
        share = inner.epoch_length / inner.world_size
        share = math.floor(share) if getattr(inner, "drop_last", False) else math.ceil(share)
        size = self.loader.batch_sampler.batch_size
        drop = self.loader.batch_sampler.drop_last
        return share // size if drop else math.ceil(share / size)

    def state_dict(self) -> dict:
        return self._pending if self._pending is not None else self.loader.state_dict()

    def load_state_dict(self, state: dict) -> None:

        inner = self.loader.sampler.inner
        self._pending = read_state(
            state,
            epoch_length=inner.epoch_length,
            seed=inner.seed,
            order=inner.order_name,
            where="HyperframeDataModule training loader",
        )


class HyperframeDataModule(lightning.LightningDataModule):
    """Train, validation and test loaders of ``store`` (a path or URL) from the options of a
    config's ``data`` section (module doc); ``model`` (a registered name) fixes the layout the
    contract prepares, ``seed`` is ``train.seed`` (windows, augmentation, order), ``balanced``
    ``train.balanced``; ``test_split`` names the split ``test_dataloader`` reads (with the
    validation sampler), None for every video."""

    def __init__(
        self,
        store: str | os.PathLike,
        *,
        model: str | None = None,
        seed: int = 0,
        balanced: bool = False,
        test_split: str | None = "test",
        **data: Any,
    ) -> None:
        super().__init__()

        if "store" in data:
            raise ConfigError("data.store: give the store as the first argument only")
        raw = {
            "data": {"store": os.fspath(store), **data},
            "model": {"name": model} if model is not None else {},
            "train": {"seed": seed, "balanced": balanced},
        }
        self.config = config_from_dict(raw)
        self.test_split = test_split
        self._bundle = None
        self._train: _EpochLoader | None = None
        self._pending: dict | None = None

    @classmethod
    def from_config(cls, config, overrides: list[str] | None = None, **kwargs: Any):
        """The data module of a training config (a YAML path, a mapping or a ``Config``):
        its ``data`` section, ``model.name``, ``train.seed`` and ``train.balanced``."""

        cfg = load_config(config, overrides)
        data = {k: v for k, v in cfg.to_dict()["data"].items() if k != "store"}
        return cls(
            cfg.data.store,
            model=cfg.model.name,
            seed=cfg.train.seed,
            balanced=cfg.train.balanced,
            **kwargs,
            **data,
        )

    @property
    def bundle(self):
        """The run's data (:class:`~hyperframes.train._config._data.DataBundle`): split, classes,
        datasets and the input contract; made once, when first asked for."""
        if self._bundle is None:
            d = self.config.data
            store = open_store(d.store, cache_dir=d.cache_dir, cache_limit=d.cache_limit)
            self._bundle = build_data(self.config, store)
        return self._bundle

    @property
    def classes(self) -> list[str]:
        return self.bundle.classes

    @property
    def num_classes(self) -> int:
        return self.bundle.num_classes

    @property
    def contract(self):
        """How a batch's frames become the model's input: ``contract.prepare(batch.frames)``."""
        return self.bundle.contract

    def setup(self, stage: str | None = None) -> None:
        self.bundle  # noqa: B018  (opens the store and splits it on every rank)

    def _rank(self) -> tuple[int, int]:
        trainer = self.trainer
        if trainer is None:
            return 0, 1
        return int(trainer.global_rank), int(trainer.world_size)

    def _loader(self, dataset, *, train: bool):

        cfg = self.config
        rank, world = self._rank()
        return loader(
            dataset,
            batch_size=cfg.data.batch_size
            if train
            else (cfg.data.val_batch_size or cfg.data.batch_size),
            shuffle=train,
            workers=loader_workers(cfg),
            balanced=train and cfg.train.balanced,
            rank=rank,
            world_size=world,
            drop_last=train and cfg.data.drop_last,
            seed=cfg.train.seed,
        )

    def train_dataloader(self) -> _EpochLoader:
        self._train = _EpochLoader(self, self._loader(self.bundle.train, train=True))
        if self._pending is not None:
            self._train.load_state_dict(self._pending)
            self._pending = None
        return self._train

    def val_dataloader(self):
        return self._loader(self.bundle.val, train=False)

    def test_dataloader(self):

        b = self.bundle
        ids, _ = resolve_split(b.store, self.test_split, self.config.data, role="test")
        return self._loader(make_dataset(self.config, b.store, ids, train=False), train=False)

    def state_dict(self) -> dict[str, Any]:
        """The training loader's state (the epoch and the position reached in its global
        order); empty before the first training loader."""
        if self._train is None:
            return {"train_loader": self._pending} if self._pending is not None else {}
        return {"train_loader": self._train.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Continue the training loader from a :meth:`state_dict` (applied when Lightning
        next iterates it, if that is the saved epoch)."""
        state = state_dict.get("train_loader")
        if state is None:
            return
        if self._train is not None:
            self._train.load_state_dict(state)
        else:
            self._pending = state

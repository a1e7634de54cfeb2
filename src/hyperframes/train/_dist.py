"""Distributed data parallel through ``torchrun``: process group set-up, gathers, rank 0.

``torchrun --nproc_per_node N -m hyperframes train CONFIG`` sets ``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``; :func:`setup` joins the group (``gloo``
on CPU, ``nccl`` on CUDA). A single process (no ``WORLD_SIZE`` or 1) needs no group; every
helper then works locally.
"""

from __future__ import annotations

import dataclasses
import os

import torch
import torch.distributed as dist

from .._core._errors import ConfigError

__all__ = ["Dist", "all_gather_objects", "barrier", "broadcast_object", "setup", "teardown"]


@dataclasses.dataclass(frozen=True)
class Dist:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    owns_group: bool = False  # this module created the process group (and destroys it)

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world_size > 1


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"environment variable {name}={value!r} is not an integer") from None


def setup(device_kind: str) -> Dist:
    """Join the process group described by the environment (or an existing one)."""
    if dist.is_available() and dist.is_initialized():
        return Dist(dist.get_rank(), dist.get_world_size(), _env_int("LOCAL_RANK", 0), False)
    world = _env_int("WORLD_SIZE", 1)
    if world <= 1:
        return Dist()
    if not dist.is_available():
        raise ConfigError("WORLD_SIZE > 1 but this torch was built without torch.distributed")
    rank, local = _env_int("RANK", 0), _env_int("LOCAL_RANK", 0)
    backend = "nccl" if device_kind == "cuda" else "gloo"
    if device_kind == "cuda":
        torch.cuda.set_device(local)
    dist.init_process_group(backend=backend, init_method="env://", rank=rank, world_size=world)
    return Dist(rank, world, local, True)


def teardown(d: Dist) -> None:
    if d.owns_group and dist.is_initialized():
        dist.destroy_process_group()


def barrier(d: Dist) -> None:
    if d.active:
        dist.barrier()


def all_gather_objects(obj, d: Dist) -> list:
    """Every rank's ``obj`` (picklable), in rank order."""
    if not d.active:
        return [obj]
    out = [None] * d.world_size
    dist.all_gather_object(out, obj)
    return out


def broadcast_object(obj, d: Dist, src: int = 0):
    """Rank ``src``'s ``obj`` on every rank."""
    if not d.active:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]

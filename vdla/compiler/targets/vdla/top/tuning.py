"""The VDLA templates' tuning knobs (AutoTVM's VTA space) and how a schedule gets its tiles.

Every template declaration records its ``workload`` (``[template name, args]``, the args
being what ``autotvm.task.create`` takes) on the accumulation stage. Its schedule then asks
:func:`resolve`, which answers in one of three ways:

* inside an autotvm template (a space being built, or a point being measured): the knobs
  are defined on that config -- ``tile_co``/``tile_h``/``tile_w``/``tile_ci`` (splits of the
  output-channel blocks, rows, columns and input-channel blocks; the inner factor is the
  tile) and ``oc_nthread``/``h_nthread`` (virtual threads over output-channel tiles or row
  tiles) -- and a point's values are the tiles (the space and the fallback: the hand pick);
* outside one, with ``autotvm.apply_history_best(log)`` active and no tiles given
  explicitly: the best tuned point of this workload;
* otherwise None: the hand-picked tiling rule of :mod:`.tiling`, exactly as before.

The hand pick the graph compiler builds asks for :data:`HAND_VTHREADS` virtual threads (one
where no tile fits with them); :func:`schedule_hand` is that pick, and the templates call it,
so a template's fallback is what a model builds untuned.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ....autotvm.dispatch import current_config, query
from ....autotvm.space import ConfigSpace
from ..env import VDLAError
from .common import Knobs

__all__ = ["resolve", "define_conv_space", "define_dense_space", "record_fallback", "schedule_hand", "THREADS",
           "MAX_STEPS", "HAND_VTHREADS"]

THREADS = (1, 2)  # virtual-thread choices per axis
#: the virtual threads of the hand pick (the graph compiler's; the tiling rule puts them over
#: output-channel tiles or row tiles, whichever its cost model prefers)
HAND_VTHREADS = 2
#: A point with more (output tile x input-channel chunk) steps than this is rejected before it
#: is built: its program has tens of thousands of instructions, takes tens of seconds to
#: compile and simulate, and pays the DMA latency per step (the hand picks use < 100).
MAX_STEPS = 512


def define_conv_space(cfg: Any, ob: int, oh: int, ow: int, cb: int) -> None:
    cfg.define_split("tile_co", ob, num_outputs=2)
    cfg.define_split("tile_h", oh, num_outputs=2)
    cfg.define_split("tile_w", ow, num_outputs=2)
    cfg.define_split("tile_ci", cb, num_outputs=2)
    cfg.define_knob("oc_nthread", list(THREADS))
    cfg.define_knob("h_nthread", list(THREADS))


def define_dense_space(cfg: Any, ob: int, kb: int) -> None:
    cfg.define_split("tile_co", ob, num_outputs=2)
    cfg.define_split("tile_ci", kb, num_outputs=2)
    cfg.define_knob("oc_nthread", list(THREADS))


def knobs_of(cfg: Any) -> Knobs:
    """The schedule knobs of a point (conv or dense space); a thread count that does not divide
    its tiles is an invalid point."""
    names = cfg.entity_map if hasattr(cfg, "entity_map") else {}
    kw: dict[str, Any] = {}
    for name in ("tile_co", "tile_h", "tile_w", "tile_ci"):
        if name in names:
            kw[name] = int(cfg[name].size[-1])
    for name in ("oc_nthread", "h_nthread"):
        if name in names:
            kw[name] = int(cfg[name].val)
    steps = 1
    for name in ("tile_co", "tile_h", "tile_w", "tile_ci"):
        if name in names:
            steps *= int(cfg[name].size[0])
    if steps > MAX_STEPS:
        raise VDLAError(f"config {cfg.index}: {steps} tile x chunk steps (more than {MAX_STEPS}: too small tiles)")
    for tile, th in (("tile_co", "oc_nthread"), ("tile_h", "h_nthread")):
        if tile in names and th in names and cfg[tile].size[0] % kw[th]:
            raise VDLAError(f"config {cfg.index}: {kw[th]} virtual threads do not divide the "
                            f"{cfg[tile].size[0]} {tile[5:]} tiles")
    return Knobs(**kw)


def _untuned(k: Knobs | None) -> bool:
    return k is None or (k.tile_co is None and k.tile_h is None and k.tile_w is None and k.tile_ci is None
                         and k.oc_nthread == 1 and k.h_nthread == 1)


def resolve(acc_op: Any, knobs: Knobs | None, define: Callable[[Any], None]) -> tuple[Any, Knobs | None]:
    """(the template's config or None, the tuned knobs or None for the hand pick); see the module doc."""
    workload = acc_op.attrs.get("workload")
    cfg = current_config()
    if cfg is not None:
        define(cfg)
        cfg.workload = workload
        if cfg.is_fallback or isinstance(cfg, ConfigSpace):
            return cfg, None
        return cfg, knobs_of(cfg)
    if workload is not None and _untuned(knobs):
        tuned = query("vdla", workload)
        if tuned is not None:
            return None, knobs_of(tuned)
    return None, None


def record_fallback(cfg: Any, k: Knobs, sizes: dict[str, int]) -> None:
    """Write the hand-picked tiles into the fallback config (``sizes``: knob -> extent)."""
    if cfg is None or not cfg.is_fallback:
        return
    for name, extent in sizes.items():
        tile = getattr(k, name)
        cfg.set(name, [extent // tile, tile])
    for name in ("oc_nthread", "h_nthread"):
        if cfg.space is not None and name in cfg.space.space_map:
            cfg.set(name, getattr(k, name))


def schedule_hand(schedule: Callable[..., Any], out: Any, config: Any) -> Any:
    """``schedule(out, knobs, config=config)`` with the hand pick's knobs: :data:`HAND_VTHREADS`
    virtual threads, or one thread where no tile fits with them (as the graph compiler retries)."""
    try:
        return schedule(out, Knobs(vthreads=HAND_VTHREADS), config=config)
    except VDLAError:
        return schedule(out, Knobs(), config=config)

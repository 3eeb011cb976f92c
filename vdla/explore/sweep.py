"""The co-design sweep: for each Config of a space, resources, clock, model cycles and latency.

    from vdla.explore import run_sweep
    res = run_sweep([{"block_in": 8}, {"block_in": 16}], board="ulx3s-85f", model="resnet18",
                    reduced=True, synth=False)
    print(res.table())

Each point (a dict of overrides on the board's Config, `space.apply`) runs as one Dask task
(`vdla.cluster.get_client`: a LocalCluster, or ``scheduler``) through :func:`evaluate`:

1. the analytic estimate (`estimate.estimate`); a part that cannot hold the Config is the
   point's result (status ``overflow``, naming each resource that overflows), before any
   synthesis starts;
2. resources and fmax: the estimate (``synth=False``), or Yosys + nextpnr placed and routed
   (`vdla.hardware.boards.build.synth_and_place`) on the board's part;
3. the model compiled for the Config and run on the golden simulator (fsim) with its cycle
   model: cycles, GEMM utilisation, DRAM bytes of the VDLA nodes (checked bit-exact against
   the int8 reference node by node); a point where a layer the default Config runs on VDLA
   falls back to the CPU (the build rejects it) is status ``fallback``, naming the layer and
   why, and stays off the Pareto front (its latency would leave out the CPU's share);
4. latency = VDLA cycles at the clock the build closes at (fmax rounded down to a whole MHz).

Results are cached as one JSON file per point under ``cache_dir``, keyed by a sha256 of the
package's sources, the base Config, the overrides and the options, so a rerun computes only
the points whose inputs changed. A point that raises is recorded with its error (and not
cached, so a rerun tries it again); the sweep goes on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import Config, ConfigError
from .space import apply, label, short_name, short_value

__all__ = ["Options", "evaluate", "run_sweep", "SweepResult", "sources_hash", "point_key", "pareto"]

_PKG = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Options:
    """What every point of a sweep shares."""

    board: str = "ulx3s-85f"
    model: str = "resnet18"
    reduced: bool = False
    size: int | None = None
    synth: bool = False
    check: bool = True  # compare every VDLA node with the int8 reference
    build_dir: str = "build/sweep"


def sources_hash() -> str:
    """sha256 over every .py file of the vdla package (a change anywhere invalidates the cache)."""
    h = hashlib.sha256()
    for p in sorted(_PKG.rglob("*.py")):
        h.update(str(p.relative_to(_PKG)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def point_key(src: str, base: Config, overrides: dict[str, Any], opts: Options) -> str:
    """The cache key: the sources, the point's Config (whatever overrides spelt it) and the options."""
    try:
        what: Any = {**apply(base, overrides).to_dict(), "name": None}
    except ConfigError:
        what = {"base": base.to_dict(), "over": overrides}  # recorded as an error; keyed by how it was asked
    model = Path(opts.model)
    if model.is_file():  # an ONNX file: its contents, not its name
        what = {"point": what, "model_sha256": hashlib.sha256(model.read_bytes()).hexdigest()}
    blob = json.dumps({"src": src, "point": what,
                       "opts": {k: v for k, v in dataclasses.asdict(opts).items() if k != "build_dir"}},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _synth_resources(board: Any, cfg: Config, lut_lanes: int, build_dir: Path) -> dict[str, Any]:
    """Yosys + nextpnr (routed) for the point; used counts and fmax from nextpnr's report."""
    from ..hardware.boards import build as flow
    from .estimate import _BELS, PARTS

    b = dataclasses.replace(board, config=cfg.replace(clock_mhz=board.clk_mhz), lut_lanes=lut_lanes)
    out = flow.synth_and_place(b, build_dir, route=True, echo=lambda *_: None)
    rep = out["nextpnr"]
    util = rep.get("utilization", {})
    part = PARTS[board.name]
    cap = {"LUT": part.luts, "DSP": part.dsps, "BRAM": part.brams}
    used = {k: util.get(bel, {}).get("used", 0) for k, bel in _BELS[part.family].items()}
    avail = {k: util.get(bel, {}).get("available") or cap[k] for k, bel in _BELS[part.family].items()}
    fmax = min((v["achieved"] for v in rep.get("fmax", {}).values()), default=0.0)
    return {"used": used, "available": avail, "fmax_mhz": round(fmax, 2), "constraint_mhz": board.clk_mhz,
            "meets_constraint": fmax >= board.clk_mhz,
            "critical_path": flow._critical_path(rep),  # the path a too-slow point is stuck on
            "seconds": round(out["yosys_s"] + out["nextpnr_s"], 1)}


def _run_model(cfg: Config, opts: Options) -> dict[str, Any]:
    from ..compiler.graph import models
    from ..compiler.graph.build import build_model
    from ..compiler.graph.zoo import load_model
    from ..runtime import Device

    spec = load_model(opts.model, reduced=opts.reduced, size=opts.size)
    m = build_model(spec, cfg)
    x = models.sample_input(m.graph, 0)
    res = m.run(x, Device("fsim", config=cfg), reference=opts.check)
    vd = [r for r in res.layers if r.target == "vdla"]
    cycles = sum(r.cycles or 0 for r in vd)
    util = sum((r.gemm_util or 0) * (r.cycles or 0) for r in vd) / max(1, cycles)
    bad = [r.node for r in vd if r.exact is False]
    # layers the VDLA build rejected ran on the CPU: their time is not in the cycles
    fell = [f"{r.node}: {r.reason[len('fallback: '):]}" for r in res.layers if r.reason.startswith("fallback")]
    return {"model": spec.description, "vdla_layers": len(vd), "layers": len(res.layers), "fallback": fell,
            "cycles": cycles,
            "gemm_util": round(util, 4), "dram_bytes": sum(r.bytes_moved for r in vd),
            "macs": sum(r.macs for r in vd), "exact": (not bad) if opts.check else None, "mismatch": bad[:5]}


def evaluate(base: Config, overrides: dict[str, Any], opts: Options, key: str = "") -> dict[str, Any]:
    """One point (see the module doc); never raises: an error is the result's ``error``."""
    from ..hardware.boards import board as get_board
    from .estimate import estimate, overflows

    t0 = time.perf_counter()
    out: dict[str, Any] = {"key": key, "label": label(overrides), "overrides": overrides, "board": opts.board,
                           "status": "error", "error": None, "source": "synth" if opts.synth else "estimate"}
    try:
        cfg = apply(base, overrides)
        out["config"] = cfg.to_dict()
        b = get_board(opts.board)
        est = estimate(b, cfg)
        out["estimate"] = est.to_dict()
        over = overflows(est)
        if over:
            out.update(status="overflow", error="does not fit: " + "; ".join(over), overflow=over)
            return out
        if opts.synth:
            res = _synth_resources(b, cfg, est.lut_lanes, Path(opts.build_dir) / (key or "point"))
        else:
            res = {"used": est.used, "available": est.available, "fmax_mhz": round(est.fmax_mhz, 2)}
        out["resources"] = res
        clock = float(max(1, int(res["fmax_mhz"])))
        out["fmax_mhz"], out["clock_mhz"] = res["fmax_mhz"], clock
        run = _run_model(cfg, opts)
        out.update(run)
        out["latency_ms"] = run["cycles"] / (clock * 1e3)
        out["gops"] = 2 * run["macs"] / (out["latency_ms"] * 1e6) if run["cycles"] else 0.0
        out["peak_gops"] = 2 * cfg.macs_per_cycle * clock / 1000
        if run["exact"] is False:
            out["error"] = f"not bit-exact at {', '.join(run['mismatch'])}"
            return out
        if run["fallback"] or not run["vdla_layers"]:
            # not comparable with the others (the CPU's share is missing): recorded, kept off the front
            n = len(run["fallback"])
            out["status"] = "fallback"
            out["error"] = (f"{n} layer(s) fell back to the CPU: {run['fallback'][0][:160]}" if n else
                            "no layer of the model runs on VDLA with this Config")
            return out
        out["status"] = "ok"
    except Exception as e:  # noqa: BLE001 - a failing point is recorded, the sweep goes on
        out["error"] = f"{type(e).__name__}: {e}"
        out["traceback"] = traceback.format_exc(limit=4)
    finally:
        out["seconds"] = round(time.perf_counter() - t0, 2)
    return out


def pareto(points: list[dict[str, Any]], resource: str) -> list[dict[str, Any]]:
    """The points no other beats on both latency and ``resource`` (LUT, DSP or BRAM), by resource."""
    ok = sorted((p for p in points if p.get("status") == "ok"),
                key=lambda p: (p["resources"]["used"][resource], p["latency_ms"]))
    front, best = [], float("inf")
    for p in ok:
        if p["latency_ms"] < best:
            front.append(p)
            best = p["latency_ms"]
    return front


@dataclass
class SweepResult:
    options: Options
    base: Config
    points: list[dict[str, Any]]
    cached: int = 0
    computed: int = 0
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"options": dataclasses.asdict(self.options), "base": self.base.to_dict(),
                "cached": self.cached, "computed": self.computed, "seconds": round(self.seconds, 2),
                "pareto": {r: [p["key"] for p in pareto(self.points, r)] for r in ("LUT", "DSP", "BRAM")},
                "points": self.points}

    def table(self) -> str:
        """One row per point: the varied parameters, then resources, clock, cycles, latency, Pareto marks."""
        o = self.options
        fronts = {r: {p["key"] for p in pareto(self.points, r)} for r in ("LUT", "DSP", "BRAM")}
        src = "synthesis + place-and-route" if o.synth else "estimate (--no-synth)"
        names: list[str] = []
        for p in self.points:
            names += [k for k in p["overrides"] if k not in names]
        cells = [[short_value(k, p["overrides"][k]) if k in p["overrides"] else "-" for k in names]
                 for p in self.points]
        heads = [short_name(k) for k in names] or ["point"]
        cells = cells if names else [["base"] for _ in self.points]
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(heads)]
        lead = "  ".join(f"{h:>{w}}" for h, w in zip(heads, widths))
        lines = [f"vdla sweep: {len(self.points)} points on {o.board} (base {self.base.name}), model "
                 f"{o.model}{' reduced' if o.reduced else ''}; resources and fmax from {src}; "
                 f"{self.computed} computed, {self.cached} cached, {self.seconds:.1f} s",
                 f"{lead}  {'status':<8} {'LUT':>6} {'DSP':>4} {'BRAM':>4} {'fmax':>6} {'cycles':>10} "
                 f"{'GEMM%':>6} {'DRAM MB':>8} {'latency':>10}  pareto"]
        for p, row in zip(self.points, cells):
            lead = "  ".join(f"{c:>{w}}" for c, w in zip(row, widths))
            if p["status"] != "ok":
                lines.append(f"{lead}  {p['status']:<8} {p.get('error') or ''}")
                continue
            u = p["resources"]["used"]
            marks = ",".join(r for r in ("LUT", "DSP", "BRAM") if p["key"] in fronts[r]) or "-"
            lines.append(f"{lead}  {'ok':<8} {u['LUT']:>6} {u['DSP']:>4} {u['BRAM']:>4} {p['fmax_mhz']:>5.1f}M "
                         f"{p['cycles']:>10} {100 * p['gemm_util']:>5.1f}% {p['dram_bytes'] / 1e6:>8.2f} "
                         f"{p['latency_ms']:>8.3f}ms  {marks}")
        return "\n".join(lines)


def run_sweep(overrides: list[dict[str, Any]], opts: Options | None = None, *, base: Config | None = None,
              scheduler: str | None = None, n_workers: int | None = None, cache_dir: str | Path | None = None,
              progress: Callable[[dict[str, Any]], None] | None = None, **kw: Any) -> SweepResult:
    """Evaluate every point of ``overrides`` on the Dask cluster; see the module doc.

    ``base``: the Config the overrides apply to (default: the board's); ``kw`` sets `Options`
    fields; ``progress`` is called with each point's result as it arrives.
    """
    from ..cluster import get_client
    from ..hardware.boards import board as get_board

    opts = dataclasses.replace(opts or Options(), **kw)
    b = get_board(opts.board)
    base = base or b.config
    t0 = time.perf_counter()
    src = sources_hash()
    keys = [point_key(src, base, q, opts) for q in overrides]
    cache = Path(cache_dir) if cache_dir else None
    results: dict[str, dict[str, Any]] = {}
    if cache:
        cache.mkdir(parents=True, exist_ok=True)
        for k in keys:
            f = cache / f"{k}.json"
            if f.is_file():
                try:
                    results[k] = {**json.loads(f.read_text()), "cached": True}
                    q = overrides[keys.index(k)]  # the same Config may have been asked another way
                    results[k].update(label=label(q), overrides=q)
                except ValueError:
                    pass  # a torn file: compute the point again
        for k in results:
            if progress:
                progress(results[k])
    todo = list({k: q for k, q in zip(keys, overrides) if k not in results}.items())  # one task per Config
    if todo:
        from distributed import as_completed

        client = get_client(scheduler, n_workers=n_workers)
        futs = {client.submit(evaluate, base, q, opts, k, key=f"sweep-{k}", pure=False): k for k, q in todo}
        for fut in as_completed(futs):
            k = futs[fut]
            try:
                r = fut.result()
            except Exception as e:  # noqa: BLE001 - a lost worker or unpicklable result: record it, go on
                q = dict(todo)[k]
                r = {"key": k, "label": label(q), "overrides": q, "board": opts.board, "status": "error",
                     "error": f"task failed: {type(e).__name__}: {e}"}
            r["cached"] = False
            results[k] = r
            if cache and r["status"] in ("ok", "overflow", "fallback"):  # errors are tried again
                (cache / f"{k}.json").write_text(json.dumps(r, indent=1, default=str) + "\n")
            if progress:
                progress(r)
    points = [results[k] for k in keys]
    n_cached = sum(1 for p in points if p.get("cached"))
    return SweepResult(opts, base, points, cached=n_cached, computed=len(points) - n_cached,
                       seconds=time.perf_counter() - t0)

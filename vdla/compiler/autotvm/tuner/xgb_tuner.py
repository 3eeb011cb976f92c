"""The learned cost model (AutoTVM's ``XGBTuner``): gradient-boosted trees over loop-IR features.

Points the template rejects (tiles that fit no buffer, loops too fine for the micro-op
cache: :func:`..features.instantiable`, a millisecond or two) are never measured, nor are cuda
points the model would plan whose loop IR the GPU would not launch (threads per block, static
shared memory: read from their GPU features) — they are
known invalid without a trial (``skip_invalid``; ``skipped`` counts them). The first
``plan_size`` points are random among the rest (there is nothing to learn from yet); from
then on every batch is model-guided. After every ``plan_size`` new measurements the model is refit on
all of them: inputs are :func:`..features.config_features` (loop-IR features of the lowered
point + its knob values), labels the scores scaled to the best, objective ``rank:pairwise``
(what matters is the order of points, not their cost). Simulated annealing then walks the
space over the model's predictions (``sa_chains`` chains, ``sa_steps`` steps, one knob changed
per step, the temperature falling to zero; a space of fewer than ``score_all_below`` points
is scored whole instead); its chains persist across refits and half of them
restart from the best measured points, so the walk keeps exploiting what was learnt. The next
plan is picked from the best unmeasured points it saw with a diversity bonus (a greedy
submodular pick rewarding knob values not yet in the plan), so one batch does not spend all
its trials on near-copies. When a plan runs out before the next refit, the annealer runs
again over the same model (the points just measured count as visited) rather than falling
back to random points. An ``eps_greedy`` share of each batch is random. ``load_history`` of
records from *other* tasks of the same template fits a base model whose predictions are the
starting margin of this task's model (transfer learning: useful before this task has data
of its own).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..features import _CACHE, GPU_FEATURES, REGISTERS_AT, calibrated, config_features, instantiable, remote_features
from ..space import ConfigEntity
from .tuner import Tuner, score

__all__ = ["XGBTuner"]

# min_child_weight 0: pairwise-rank hessians are small, and with the few dozen points of a short
# run a weight of 1 kept the trees from splitting at all (measured on exhaustive VDLA tables)
_PARAMS = {"max_depth": 6, "gamma": 1e-4, "min_child_weight": 0, "subsample": 1.0, "eta": 0.3,
           "lambda": 1.0, "alpha": 0.0, "objective": "rank:pairwise", "nthread": 1, "verbosity": 0}


class XGBTuner(Tuner):
    def __init__(self, task: Any, plan_size: int = 16, feature_type: str = "itervar", loss_type: str = "rank",
                 num_boost_round: int = 60, sa_chains: int = 8, sa_steps: int = 16, eps_greedy: float = 0.05,
                 diversity_filter_ratio: float = 2.0, score_all_below: int = 0, skip_invalid: bool = True,
                 seed: int | None = None) -> None:
        super().__init__(task, seed)
        if feature_type not in ("itervar", "knob"):
            raise ValueError(f"feature_type {feature_type!r}: 'itervar' (loop IR + knobs) or 'knob'")
        if loss_type not in ("rank", "reg"):
            raise ValueError(f"loss_type {loss_type!r}: 'rank' (rank:pairwise) or 'reg'")
        self.plan_size = plan_size
        self.feature_type = feature_type
        self.loss_type = loss_type
        self.rounds = num_boost_round
        self.sa_chains, self.sa_steps = sa_chains, sa_steps
        self.eps = eps_greedy
        self.div_ratio = diversity_filter_ratio
        self.score_all_below = score_all_below
        self.skip_invalid = skip_invalid
        self.skipped = 0  # points the template rejected, never measured
        self.dims = self.space.dims()
        self.feats: dict[int, np.ndarray] = {}
        self.xs: list[int] = []
        self.ys: list[float] = []
        self.plan: list[int] = []
        self.chains: list[int] = []  # the annealer's walkers, kept across refits
        self.model: Any = None
        self.base: Any = None
        self.fits = 0
        self._fit_at = 0  # len(self.xs) at the last refit
        self.seed = 0 if seed is None else int(seed)
        self._client: Any = None  # cuda: the Dask client the features of many points are computed on
        self.prefetched = 0  # points whose features came from the workers

    # -- the template's own verdict
    def _ok(self, idx: int) -> bool:
        return not self.skip_invalid or instantiable(self.task, self.space.get(idx))

    def _random_valid(self) -> int | None:
        """A random unmeasured point the template accepts (rejected ones count as visited)."""
        while True:
            i = self._random_unvisited()
            if i is None or self._ok(i):
                return i
            self.visited.add(i)
            self.skipped += 1

    # -- features and the model
    def _feature(self, idx: int) -> np.ndarray:
        f = self.feats.get(idx)
        if f is None:
            cfg = self.space.get(idx)
            f = (config_features(self.task, cfg) if self.feature_type == "itervar"
                 else np.asarray(cfg.get_flatten_feature(), np.float32))
            if self.feature_type == "itervar" and self.task.kind == "cuda":
                f = _CACHE.get((self.task.key(), idx), f)  # kept raw: the registers are applied at each use
            self.feats[idx] = f
        if self.feature_type == "itervar" and self.task.kind == "cuda":
            return calibrated(self.task, idx, f)  # ptxas's registers once built, else the calibrated estimate
        return f

    def _gpu_valid(self, idx: int) -> bool:
        """A cuda point the GPU would launch, as far as its loop IR tells (threads per block and
        per axis, static shared memory): one that would not is never planned by the model (a
        random pick may still draw it; its build then records why it is invalid)."""
        if self.task.kind != "cuda" or self.feature_type != "itervar":
            return True
        f = self._feature(idx)
        g = dict(zip(GPU_FEATURES, f[REGISTERS_AT + 1 - len(GPU_FEATURES):REGISTERS_AT + 1]))
        if g["threads"] < 0:  # did not lower
            return False
        from ...targets.cuda.target import cuda_limits
        from ...targets.target import Target

        lim = cuda_limits(Target(self.task.target))
        n = {k: round(2.0 ** float(g[k]) - 1) for k in ("threads_x", "threads_y", "threads_z", "threads", "shared_bytes")}
        dims = (n["threads_x"], n["threads_y"], n["threads_z"])
        return (n["threads"] <= lim.max_threads_per_block and all(d <= m for d, m in zip(dims, lim.max_threads_dim))
                and n["shared_bytes"] <= lim.max_shared_memory_per_block)

    def _prefetch(self, indices: Sequence[int]) -> None:
        """Compute the loop-IR features of many points at once on the Dask workers (a cuda conv's
        lowering takes a fifth of a second: the annealer's steps would wait on it)."""
        if self.feature_type != "itervar" or self._client is None:
            return
        todo = [i for i in dict.fromkeys(int(i) for i in indices) if i not in self.feats]
        if len(todo) < 4:
            return
        t = self.task
        try:
            futs = self._client.map(remote_features, [t.name] * len(todo), [t.args] * len(todo),
                                    [t.target] * len(todo), todo, pure=False)
            got = self._client.gather(futs)
        except Exception:  # noqa: BLE001 - a lost worker: computed here instead, one by one
            return
        for i, f in zip(todo, got):
            self.feats[i] = f
            _CACHE[(t.key(), i)] = f
        self.prefetched += len(todo)

    def _dmatrix(self, X: np.ndarray, y: np.ndarray | None = None) -> Any:
        import xgboost as xgb

        d = xgb.DMatrix(X, label=y)
        if self.base is not None:
            d.set_base_margin(self.base.predict(xgb.DMatrix(X), output_margin=True))
        return d

    def _fit(self) -> None:
        import xgboost as xgb

        y = np.asarray(self.ys, float)
        if y.max() <= 0:
            return  # nothing valid yet: the model could not tell points apart
        self._prefetch(self.xs)
        X = np.stack([self._feature(i) for i in self.xs])
        params = dict(_PARAMS, seed=self.seed, objective="rank:pairwise" if self.loss_type == "rank" else "reg:squarederror")
        self.model = xgb.train(params, self._dmatrix(X, y / y.max()), num_boost_round=self.rounds)
        self.fits += 1

    def predict(self, indices: Sequence[int]) -> np.ndarray:
        """The model's scores of points (higher is better)."""
        X = np.stack([self._feature(i) for i in indices])
        return np.asarray(self.model.predict(self._dmatrix(X)), float)

    # -- simulated annealing over the model
    def _neighbour(self, idx: int) -> int:
        gene, t = [], idx
        for d in self.dims:
            gene.append(t % d)
            t //= d
        movable = [k for k, d in enumerate(self.dims) if d > 1]
        if not movable:
            return idx
        k = int(self.rng.choice(movable))
        gene[k] = (gene[k] + int(self.rng.integers(1, self.dims[k]))) % self.dims[k]
        out, mul = 0, 1
        for v, d in zip(gene, self.dims):
            out += v * mul
            mul *= d
        return out

    def _anneal(self) -> dict[int, float]:
        seen: dict[int, float] = {}
        best = [i for s, i in sorted(zip(self.ys, self.xs), reverse=True)[: self.sa_chains // 2] if s > 0]
        chains = list(dict.fromkeys(best + self.chains))[: self.sa_chains]
        while len(chains) < self.sa_chains:
            i = self._random_valid()
            if i is None:
                break
            chains.append(i)
        if not chains:
            return seen
        self._prefetch(chains)
        cur = self.predict(chains)
        seen.update(zip(chains, cur))
        for step in range(self.sa_steps):
            temp = max(1e-3, 1.0 - step / self.sa_steps)
            nxt = [self._neighbour(i) for i in chains]
            self._prefetch(nxt)
            sc = self.predict(nxt)
            ok = [self._ok(i) and self._gpu_valid(i) for i in nxt]
            sc = np.where(ok, sc, -1e9)  # a rejected point never attracts a walker
            seen.update((i, v) for i, v in zip(nxt, sc) if v > -1e9)
            for c in range(len(chains)):
                if sc[c] > cur[c] or self.rng.random() < math.exp((sc[c] - cur[c]) / temp):
                    chains[c], cur[c] = nxt[c], sc[c]
        self.chains = chains
        return seen

    def _candidates(self) -> dict[int, float]:
        """Model scores of unmeasured points: every one when the space has fewer than
        ``score_all_below`` points (then the model's best is found exactly, no annealing),
        else those the annealer visits."""
        if len(self.space) < self.score_all_below:
            left = [i for i in range(len(self.space)) if i not in self.visited and self._ok(i) and self._gpu_valid(i)]
            return dict(zip(left, self.predict(left))) if left else {}
        return self._anneal()

    def _diverse_pick(self, cands: list[tuple[int, float]], n: int) -> list[int]:
        """Greedy: each pick maximises its normalised score + 1/len(knobs) per knob value new to the plan."""
        if not cands:
            return []
        s = np.array([c[1] for c in cands], float)
        s = (s - s.min()) / (s.max() - s.min() + 1e-12)
        genes = []
        for idx, _ in cands:
            g, t = [], idx
            for d in self.dims:
                g.append(t % d)
                t //= d
            genes.append(g)
        covered: list[set[int]] = [set() for _ in self.dims]
        picked: list[int] = []
        left = list(range(len(cands)))
        while left and len(picked) < n:
            gains = [s[j] + sum(genes[j][k] not in covered[k] for k in range(len(self.dims))) / max(1, len(self.dims))
                     for j in left]
            j = left.pop(int(np.argmax(gains)))
            picked.append(cands[j][0])
            for k, v in enumerate(genes[j]):
                covered[k].add(v)
        return picked

    def _replan(self) -> None:
        self._fit()
        self._plan()

    def _plan(self) -> None:
        """The next plan from the current model (none before the first fit)."""
        if self.model is None:
            return
        seen = self._candidates()
        cands = sorted(((i, s) for i, s in seen.items() if i not in self.visited), key=lambda kv: -kv[1])
        cands = cands[: int(self.plan_size * self.div_ratio)]
        self.plan = self._diverse_pick(cands, self.plan_size)

    # -- the tuner interface
    def tune(self, n_trial: int, measure_option: Any = None, early_stopping: int | None = None,
             callbacks: Sequence[Any] = ()) -> None:
        if self.task.kind == "cuda" and self.feature_type == "itervar" and measure_option is not None:
            from .... import cluster

            try:  # the measuring cluster computes the annealer's features too
                self._client = measure_option.client or cluster.get_client(measure_option.scheduler)
            except Exception:  # noqa: BLE001 - then they are computed here
                self._client = None
        super().tune(n_trial, measure_option, early_stopping, callbacks)

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        out: list[ConfigEntity] = []
        replanned = False
        while len(out) < batch_size:
            idx = None
            if not self.plan and self.model is not None and not replanned:
                self._plan()  # the plan ran out before the next refit: anneal again, not random
                replanned = True
            while self.plan and self.rng.random() >= self.eps:
                cand = self.plan.pop(0)
                if cand not in self.visited:
                    idx = cand
                    break
            if idx is None:
                idx = self._random_valid()
                if idx is None:
                    break
            self.visited.add(idx)
            out.append(self.space.get(idx))
        return out

    def update(self, inputs: list[Any], results: list[Any]) -> None:
        for inp, res in zip(inputs, results):
            if inp.config.index is None:
                continue
            self.xs.append(int(inp.config.index))
            self.ys.append(score(self.task, res))
        if len(self.xs) - self._fit_at >= self.plan_size:
            self._fit_at = len(self.xs)
            self._replan()

    def load_history(self, records: Sequence[tuple[Any, Any]]) -> None:
        """This task's records count as data; other tasks' records of the same template (same knobs)
        train the base model (transfer learning)."""
        import xgboost as xgb

        super().load_history(records)
        others = [(i, r) for i, r in records if i.task.key() != self.task.key() and i.task.name == self.task.name]
        if not others:
            return
        X, y = [], []
        by_task: dict[str, list[tuple[Any, Any]]] = {}
        for i, r in others:
            by_task.setdefault(i.task.key(), []).append((i, r))
        for pairs in by_task.values():
            sc = np.array([score(i.task, r) for i, r in pairs])
            if sc.max() <= 0:
                continue
            for (i, _), s in zip(pairs, sc / sc.max()):
                f = config_features(i.task, i.config) if self.feature_type == "itervar" else \
                    np.asarray(i.config.get_flatten_feature(), np.float32)
                X.append(f)
                y.append(s)
        if not X or len({len(x) for x in X} | {len(self._feature(0))}) != 1:
            return  # no usable data, or another space's feature length
        params = dict(_PARAMS, seed=self.seed)
        # one group: a point's label is its share of its own task's best, which compares across
        # tasks (ranking within each task only was measured worse: 3.2 against 2.0 trials to 95%)
        self.base = xgb.train(params, xgb.DMatrix(np.stack(X), label=np.asarray(y)), num_boost_round=self.rounds)
        if self.model is None and self.xs:
            self._replan()
        elif self.model is None:
            # no data of our own yet: plan from the base model alone
            self.model = _BaseOnly()
            seen = self._anneal()
            self.model = None
            self.plan = self._diverse_pick(sorted(seen.items(), key=lambda kv: -kv[1])[: 2 * self.plan_size],
                                           self.plan_size)


class _BaseOnly:
    """A model that predicts zero: with the base margin set, the prediction is the base model's."""

    def predict(self, d: Any) -> np.ndarray:
        return np.asarray(d.get_base_margin(), float)

"""Auto-tuning a VDLA schedule with ``vdla.autotvm``
=================================================

AutoTVM's workflow with vdla's names (``vdla.autotvm`` has AutoTVM's API): write the
schedule as a *template* whose choices are *knobs*, let ``autotvm.task.create`` enumerate
the configuration space, let a *tuner* measure some points of it, log every measurement,
and build with the best record.

On the ``vdla`` target a point's cost is the number of cycles the golden simulator's cycle
model counts: deterministic, and cheap to get (no board, no timing noise). Every point is
also checked against the template's numpy reference while it is measured, so a schedule
that computes the wrong thing can never win.

Run: ``python docs/tutorials/tune_vdla_matmul.py`` (a 2x4x8-tile matrix multiply and 8
trials, a few seconds); ``VDLA_TUTORIAL_FULL=1`` tunes a larger one with more trials.
"""

import os
from pathlib import Path

import numpy as np

import vdla
from vdla import autotvm, te
from vdla.compiler.targets.vdla.env import get_env
from vdla.contrib import utils

env = get_env(vdla.preset("default"))
FULL = bool(os.environ.get("VDLA_TUTORIAL_FULL"))
SHIFT = 6

# %%
# Step 1: a tunable template
# --------------------------
# The computation is the one of ``vdla_matrix_multiply.py`` (int8 tiles, int32 accumulation,
# shift and clip on the tensor ALU). Its schedule has two choices, declared as knobs on the
# config that ``autotvm.get_config()`` returns:
#
# * ``tile_k``: how many K tiles are loaded into the on-chip buffers per step (a split of K);
# * ``tile_n``: how many output column tiles one step computes (a split of N); the input
#   tiles are reloaded for every group of columns, the weights for every step.
#
# While the space is built, ``cfg`` is the :class:`ConfigSpace` (``define_split`` records the
# choices and ``cfg[...]`` reads the first); while a point is measured it is that point. A
# template also gets a numpy ``reference`` that measurement checks each point's output with.


def matmul_reference(args, inputs):
    """The expected output of packed A (m, k, BATCH, BLOCK_IN) and W (n, k, BLOCK_OUT, BLOCK_IN)."""
    a, w = inputs
    acc = np.einsum("mkbi,nkoi->mnbo", a.astype(np.int32), w.astype(np.int32))
    return [np.clip(acc >> SHIFT, -128, 127).astype(np.int8)]


@autotvm.template("tutorial_matmul.vdla", reference=matmul_reference)
def matmul(m, n, k):
    A = te.placeholder((m, k, env.BATCH, env.BLOCK_IN), env.inp_dtype, name="A")
    W = te.placeholder((n, k, env.BLOCK_OUT, env.BLOCK_IN), env.wgt_dtype, name="W")
    A_buf = te.compute(A.shape, lambda *i: A(*i), "A_buf")
    W_buf = te.compute(W.shape, lambda *i: W(*i), "W_buf")
    ko = te.reduce_axis((0, k), name="ko")
    ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")
    C_buf = te.compute(
        (m, n, env.BATCH, env.BLOCK_OUT),
        lambda bo, co, bi, ci: te.sum(
            A_buf[bo, ko, bi, ki].astype(env.acc_dtype) * W_buf[co, ko, ci, ki].astype(env.acc_dtype),
            axis=[ko, ki]),
        name="C_buf")
    C_shr = te.compute(C_buf.shape, lambda *i: C_buf(*i) >> SHIFT, name="C_shr")
    C_clip = te.compute(C_buf.shape, lambda *i: te.max(te.min(C_shr(*i), 127), -128), name="C_clip")
    C = te.compute(C_buf.shape, lambda *i: C_clip(*i).astype(env.out_dtype), name="C")

    s = te.create_schedule(C.op)
    for t, scope in ((A_buf, env.inp_scope), (W_buf, env.wgt_scope), (C_buf, env.acc_scope),
                     (C_shr, env.acc_scope), (C_clip, env.acc_scope)):
        s[t].set_scope(scope)

    cfg = autotvm.get_config()
    cfg.define_split("tile_k", k, num_outputs=2)  # [steps, K tiles per step]
    cfg.define_split("tile_n", n, num_outputs=2)  # [groups, column tiles per group]
    cfg.add_flop(2.0 * m * n * k * env.BATCH * env.BLOCK_OUT * env.BLOCK_IN)

    bo, co, bi, ci = s[C_buf].op.axis
    no, ni = cfg["tile_n"].apply(s, C_buf, co)
    koo, koi = cfg["tile_k"].apply(s, C_buf, ko)
    s[C_buf].reorder(no, koo, bo, ni, koi, bi, ci, ki)
    s[A_buf].compute_at(s[C_buf], koo)
    s[W_buf].compute_at(s[C_buf], koo)
    for t in (A_buf, W_buf):
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    s[C_buf].tensorize(bi, env.gemm)
    for t in (C_shr, C_clip):
        s[t].pragma(s[t].op.axis[0], env.alu)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    return s, [A, W, C]


# %%
# Step 2: the task and its space
# ------------------------------
# A task is a template with its arguments and a target. Printing the space shows each knob
# and its choices; the space is their product.
shape = (4, 8, 16) if FULL else (2, 4, 8)  # m, n, k in tiles
task = autotvm.task.create("tutorial_matmul.vdla", list(shape), target="vdla")
print(task)
print(task.config_space)

# %%
# Step 3: how points are measured
# -------------------------------
# Measurements run as Dask tasks (``vdla.cluster``: a local cluster of worker processes, or a
# remote scheduler via ``VDLA_SCHEDULER``). Here one in-process worker is enough and starts
# at once; give ``measure_option`` no ``client`` to get a worker process per core (a script
# doing that keeps its work under ``if __name__ == "__main__":``, as the workers import it).
# The runner's ``device`` is where the point runs: ``fsim`` (the golden simulator) or
# ``verilator`` (the RTL).
from distributed import Client  # noqa: E402  (the tune extra brings Dask)

client = Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0")
option = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=30),
                                runner=autotvm.LocalRunner(device="fsim", timeout=30), client=client)

# %%
# Step 4: tune
# ------------
# A tuner proposes points, the measurements come back, the tuner learns. ``XGBTuner`` fits a
# gradient-boosted cost model on loop features; ``GATuner``, ``RandomTuner`` and
# ``GridSearchTuner`` are the others. Each measurement is appended to the log as a JSON line,
# so a run can be resumed and its best records used later.
n_trial = 32 if FULL else 8
temp = utils.tempdir()  # removed when the script ends
log = Path(temp.relpath("tutorial_matmul.log"))
tuner = autotvm.tuner.XGBTuner(task, seed=0) if FULL else autotvm.tuner.RandomTuner(task, seed=0)
tuner.tune(n_trial=min(n_trial, len(task.config_space)), measure_option=option,
           callbacks=[autotvm.callback.log_to_file(log)])
client.close()

records = list(autotvm.record.load_from_file(log))
for inp, res in records:
    print(f"  {inp.config}: {res.cost:,.0f} cycles" if res.ok else f"  {inp.config}: error {res.error_msg}")
best_cycles = min(res.cost for _, res in records)
print(f"best of {len(records)}: {tuner.best_config} at {best_cycles:,.0f} cycles")

# %%
# Step 5: build with the best record
# ----------------------------------
# ``apply_history_best`` reads the log; inside it, a template called outside tuning takes the
# best record of its workload (a workload with no record takes the first choice of each knob,
# as AutoTVM's fallback does).
with autotvm.apply_history_best(log):
    s, args = matmul(*shape)
f = vdla.build(s, args, target="vdla", config=env.config, name="matmul_tuned")

m, n, k = shape
rng = np.random.default_rng(0)
a = rng.integers(-128, 128, (m, k, env.BATCH, env.BLOCK_IN), dtype=np.int8)
w = rng.integers(-128, 128, (n, k, env.BLOCK_OUT, env.BLOCK_IN), dtype=np.int8)
out = np.zeros((m, n, env.BATCH, env.BLOCK_OUT), np.int8)
report = f(vdla.Device("fsim", config=env.config), a, w, out)
np.testing.assert_array_equal(out, matmul_reference(None, [a, w])[0])
assert report.cycles == best_cycles, (report.cycles, best_cycles)  # the tuned schedule is the one built
print(f"tuned matmul: {report.cycles:,} cycles, output equal to numpy")

# The first choice of each knob (AutoTVM's fallback), for comparison.
s, args = matmul(*shape)
fallback = vdla.build(s, args, target="vdla", config=env.config, name="matmul_fallback")
print(f"fallback matmul: {fallback(vdla.Device('fsim', config=env.config), a, w, out).cycles:,} cycles")
print("tune_vdla_matmul: OK")

# ruff: noqa  (TVM code as its users write it: only the imports are changed)
"""TVM's "Tuning High Performance Convolution on NVIDIA GPUs" (tune_conv2d_cuda.py): a tunable
template for a batch-1 NCHW convolution (4-way splits of the output axes onto blocks, virtual
threads and threads, 3-way splits of the reduction, shared and local caches, unroll pragmas),
its task and search space, XGBoost tuning, and the best point built, checked and timed;
v0.18 spellings, imports changed.

The tutorial leaves the tuning lines commented out for its readers to run; with a CUDA GPU they
run here (the tutorial's 5 trials), the best record is built, checked against numpy and timed as
TVM's does. Without one, tuning (which times points on a GPU) is left out and the program checks
what it can: the space, the untuned (fallback) point and a tiled point of the space built for
cuda with the PTX assembled by ptxas for sm_80 and sm_90, and their loop nests (threads as
loops) run on the CPU against numpy."""
import logging
import sys
import numpy as np

import vdla as tvm
from vdla import te, topi, testing
from vdla.topi.testing import conv2d_nchw_python
import vdla.testing

from vdla import autotvm

######################################################################
# Step 1: define the search space
# -------------------------------
# A schedule template general enough to cover the hand-written GPU convolutions: every output
# axis split four ways (block, virtual thread, thread, inner), every reduction axis three ways,
# the input and the weights staged in shared memory then registers, and the unrolling tuned.
# The space of a conv2d is large (around 10^9 points for some shapes).


@autotvm.template("tutorial/conv2d_no_batching")
def conv2d_no_batching(N, H, W, CO, CI, KH, KW, stride, padding):
    assert N == 1, "Only consider batch_size = 1 in this template"

    data = te.placeholder((N, CI, H, W), name="data")
    kernel = te.placeholder((CO, CI, KH, KW), name="kernel")
    conv = topi.nn.conv2d_nchw(data, kernel, stride, padding, dilation=1, out_dtype="float32")
    s = te.create_schedule([conv.op])

    ##### space definition begin #####
    n, f, y, x = s[conv].op.axis
    rc, ry, rx = s[conv].op.reduce_axis

    cfg = autotvm.get_config()
    cfg.define_split("tile_f", f, num_outputs=4)
    cfg.define_split("tile_y", y, num_outputs=4)
    cfg.define_split("tile_x", x, num_outputs=4)
    cfg.define_split("tile_rc", rc, num_outputs=3)
    cfg.define_split("tile_ry", ry, num_outputs=3)
    cfg.define_split("tile_rx", rx, num_outputs=3)
    cfg.define_knob("auto_unroll_max_step", [0, 512, 1500])
    cfg.define_knob("unroll_explicit", [0, 1])
    ##### space definition end #####

    # inline padding
    pad_data = s[conv].op.input_tensors[0]
    s[pad_data].compute_inline()
    data, raw_data = pad_data, data

    output = conv
    OL = s.cache_write(conv, "local")

    # create cache stage
    AA = s.cache_read(data, "shared", [OL])
    WW = s.cache_read(kernel, "shared", [OL])
    AL = s.cache_read(AA, "local", [OL])
    WL = s.cache_read(WW, "local", [OL])

    # tile and bind spatial axes
    n, f, y, x = s[output].op.axis
    bf, vf, tf, fi = cfg["tile_f"].apply(s, output, f)
    by, vy, ty, yi = cfg["tile_y"].apply(s, output, y)
    bx, vx, tx, xi = cfg["tile_x"].apply(s, output, x)
    kernel_scope = n  # this is the scope to attach global config inside this kernel

    s[output].bind(bf, te.thread_axis("blockIdx.z"))
    s[output].bind(by, te.thread_axis("blockIdx.y"))
    s[output].bind(bx, te.thread_axis("blockIdx.x"))
    s[output].bind(vf, te.thread_axis("vthread"))
    s[output].bind(vy, te.thread_axis("vthread"))
    s[output].bind(vx, te.thread_axis("vthread"))
    s[output].bind(tf, te.thread_axis("threadIdx.z"))
    s[output].bind(ty, te.thread_axis("threadIdx.y"))
    s[output].bind(tx, te.thread_axis("threadIdx.x"))
    s[output].reorder(n, bf, by, bx, vf, vy, vx, tf, ty, tx, fi, yi, xi)
    s[OL].compute_at(s[output], tx)

    # tile reduction axes
    n, f, y, x = s[OL].op.axis
    rc, ry, rx = s[OL].op.reduce_axis
    rco, rcm, rci = cfg["tile_rc"].apply(s, OL, rc)
    ryo, rym, ryi = cfg["tile_rx"].apply(s, OL, ry)
    rxo, rxm, rxi = cfg["tile_ry"].apply(s, OL, rx)
    s[OL].reorder(rco, ryo, rxo, rcm, rym, rxm, rci, ryi, rxi, n, f, y, x)

    s[AA].compute_at(s[OL], rxo)
    s[WW].compute_at(s[OL], rxo)
    s[AL].compute_at(s[OL], rxm)
    s[WL].compute_at(s[OL], rxm)

    # cooperative fetching
    for load in [AA, WW]:
        n, f, y, x = s[load].op.axis
        fused = s[load].fuse(n, f, y, x)
        tz, fused = s[load].split(fused, nparts=cfg["tile_f"].size[2])
        ty, fused = s[load].split(fused, nparts=cfg["tile_y"].size[2])
        tx, fused = s[load].split(fused, nparts=cfg["tile_x"].size[2])
        s[load].bind(tz, te.thread_axis("threadIdx.z"))
        s[load].bind(ty, te.thread_axis("threadIdx.y"))
        s[load].bind(tx, te.thread_axis("threadIdx.x"))

    # tune unroll
    s[output].pragma(kernel_scope, "auto_unroll_max_step", cfg["auto_unroll_max_step"].val)
    s[output].pragma(kernel_scope, "unroll_explicit", cfg["unroll_explicit"].val)

    return s, [raw_data, kernel, conv]


######################################################################
# Step 2: search through the space
# --------------------------------
# The last convolution layer of ResNet. The space is large, so the XGBoost tuner suits it; the
# tutorial does a handful of trials for show (around 1000 find good kernels).

# logging config (for printing tuning log to screen)
logging.getLogger("autotvm").setLevel(logging.DEBUG)
logging.getLogger("autotvm").addHandler(logging.StreamHandler(sys.stdout))

# the last layer in resnet
N, H, W, CO, CI, KH, KW, strides, padding = 1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1)
task = autotvm.task.create(
    "tutorial/conv2d_no_batching", args=(N, H, W, CO, CI, KH, KW, strides, padding), target="cuda"
)
print(task.config_space)

# Measure on the local GPU: 3 repeats of at least 100 ms each per point, 4 s to run one
measure_option = autotvm.measure_option(
    builder=autotvm.LocalBuilder(),
    runner=autotvm.LocalRunner(repeat=3, min_repeat_ms=100, timeout=4),
)

record_file = None
# Tune, logging every record to conv2d.log. Many points of the space are invalid (too many
# threads, too much shared memory): errors are expected; non-zero GFLOPS means it works.
# The tutorial leaves these lines for its readers to uncomment; they need a GPU to time on.
if tvm.cuda(0).exist:
    tuner = autotvm.tuner.XGBTuner(task)
    record_file = "conv2d.log"
    tuner.tune(
        n_trial=5,
        measure_option=measure_option,
        callbacks=[autotvm.callback.log_to_file(record_file)],
    )

#########################################################################
# Finally inspect the best config in the log, check it and time it.

# inspect the best config
dispatch_context = autotvm.apply_history_best(record_file)
best_config = dispatch_context.query(task.target, task.workload)
print("\nBest config:")
print(best_config)

# apply history best from log file
with autotvm.apply_history_best(record_file):
    with tvm.target.Target("cuda"):
        s, arg_bufs = conv2d_no_batching(N, H, W, CO, CI, KH, KW, strides, padding)
        func = tvm.build(s, arg_bufs)

# check correctness
a_np = np.random.uniform(size=(N, CI, H, W)).astype(np.float32)
w_np = np.random.uniform(size=(CO, CI, KH, KW)).astype(np.float32)
c_np = conv2d_nchw_python(a_np, w_np, strides, padding)

if tvm.cuda(0).exist:
    dev = tvm.cuda()
    a_tvm = tvm.nd.array(a_np, device=dev)
    w_tvm = tvm.nd.array(w_np, device=dev)
    c_tvm = tvm.nd.empty(c_np.shape, device=dev)
    func(a_tvm, w_tvm, c_tvm)

    tvm.testing.assert_allclose(c_np, c_tvm.numpy(), rtol=1e-2)

    # Time it: many calls (400) per measurement hide the noise and the launch overhead
    evaluator = func.time_evaluator(func.entry_name, dev, number=400)
    print("Time cost of this operator: %f" % evaluator(a_tvm, w_tvm, c_tvm).mean)
    print("tune conv2d cuda: all checks passed (ran on the GPU)")
else:
    # No GPU: prove the PTX with ptxas and run the loop nest on the CPU (threads as loops), for the
    # point just built (the untuned one: the first choice of every knob, one thread per block) and
    # for a tiled point of the space: 4 x 7 x 7 threads in a block, 2 virtual threads over the
    # channels, the input channels staged in shared memory 8 at a time, unrolled
    tiled = task.config_space.get(task.config_space.index_of({
        "tile_f": [16, 2, 4, 4], "tile_y": [1, 1, 7, 1], "tile_x": [1, 1, 7, 1], "tile_rc": [64, 4, 2],
        "tile_ry": [1, 1, 3], "tile_rx": [1, 3, 1], "auto_unroll_max_step": 512, "unroll_explicit": 1}))
    for what, (s, arg_bufs) in (("untuned", (s, arg_bufs)), ("tiled", task.instantiate(tiled))):
        for arch, report in tvm.testing.assemble_cuda(s, arg_bufs).items():
            print(what, arch, report.strip().splitlines()[-2].strip())
        c_cpu = np.zeros(c_np.shape, dtype=np.float32)
        tvm.testing.run_cuda_schedule_on_cpu(s, arg_bufs, a_np, w_np, c_cpu)
        tvm.testing.assert_allclose(c_np, c_cpu, rtol=1e-4)
    print("tune conv2d cuda: all checks passed (built only: no CUDA GPU, not tuned; PTX assembled for sm_80 "
          "and sm_90, loop nests checked on the CPU)")

"""The operator library's templates: spaces, the fallback is today's hand-picked schedule (same
generated code, by fingerprint), a tuned record changes what a plain schedule call builds, and
bad tasks are named."""

from __future__ import annotations

import pytest
from support.autotvm import LLVM_CONV, VDLA_CONV, VDLA_DENSE

from vdla import preset
from vdla.compiler import autotvm, build, te, topi
from vdla.compiler import fingerprint as fp
from vdla.compiler.autotvm import ApplyConfig, TaskError
from vdla.compiler.autotvm.measure import MeasureInput, MeasureResult
from vdla.compiler.targets.llvm import schedules
from vdla.compiler.targets.vdla import top as T
from vdla.compiler.targets.vdla.top.tuning import HAND_VTHREADS

LLVM_NCHW = ["conv2d_nchw.x86", [[1, 8, 10, 10], [16, 8, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1]]]
CASES = [(*VDLA_CONV, "vdla"), (*VDLA_DENSE, "vdla"), (*LLVM_CONV, "llvm"), ("dense.x86", [2, 64, 32, True], "llvm"),
         (*LLVM_NCHW, "llvm"),
         ("group_conv2d_packed.vdla", [[1, 4, 8, 8, 1, 16], [4, 2, 3, 3, 16, 16], 2, [1, 1], 1, True, False, "default"],
          "vdla"),
         ("conv2d_transpose_packed.vdla", [[1, 2, 4, 4, 1, 16], [2, 2, 2, 2, 2, 2, 16, 16], 2, 1, 4, True, False,
                                           "default"], "vdla")]


@pytest.mark.parametrize("name, args, target", CASES, ids=[c[0] for c in CASES])
def test_space_and_fallback(name, args, target) -> None:  # type: ignore[no-untyped-def]
    task = autotvm.task.create(name, args, target)
    assert len(task.config_space) > 1 and task.flop > 0
    fb = task.fallback()
    assert fb.is_fallback and set(fb.knobs()) == set(task.config_space.knob_names())
    assert fb.index is not None, f"{name}: the hand pick {fb} is outside the space"
    # the fallback's knob values, applied as an ordinary point, build the same loop program
    s1, t1 = task.instantiate(fb)
    s2, t2 = task.instantiate(task.config_space.get(fb.index))
    assert str(autotvm.features.lower_loops(s1, t1)) == str(autotvm.features.lower_loops(s2, t2))


def _vdla_hand(conv_args):  # type: ignore[no-untyped-def]
    data, kernel, stride, padding, bias, residual, config = conv_args
    cfg = preset(config)
    D = te.placeholder(tuple(data), "int8", name="data")
    K = te.placeholder(tuple(kernel), "int8", name="kernel")
    B = te.placeholder((kernel[0], 1, 16), "int32", name="bias")
    out = T.conv2d_packed(D, K, tuple(stride), tuple(padding), T.Tail(bias=True, shift=8), bias=B, config=cfg)
    # the graph compiler's hand pick (build_kernel's knobs): the templates' fallback
    return T.schedule_conv2d_packed(out, T.Knobs(vthreads=HAND_VTHREADS), config=cfg), [D, K, B, out], cfg


def test_fallback_generated_code_is_unchanged(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """VDLA_FINGERPRINT: the untuned template (fallback) and today's hand path emit identical code."""
    digests = {}
    for way in ("hand", "fallback"):
        folder = tmp_path / way
        monkeypatch.setenv(fp.ENV, str(folder))
        if way == "hand":
            s, args, cfg = _vdla_hand(VDLA_CONV[1])
            build(s, args, target="vdla", name="conv2d", config=cfg)
            # the graph's untuned blocks on this host (input: 8 with AVX2, 16 with AVX-512; output: the
            # block whose register tile of the 8x8 output holds the most accumulators)
            b, ob = schedules.channel_block(32), schedules.conv_block(32, 8, 8)
            x = te.placeholder((1, 32 // b, 8, 8, b), name="data")
            w = te.placeholder((32 // ob, 32 // b, 3, 3, b, ob), name="kernel")
            y = topi.conv2d_NCHWc(x, w, 1, 1)
            build(schedules.schedule_conv2d_NCHWc(y), [x, w, y], name="conv2d_NCHWc")
            x = te.placeholder((1, 8, 10, 10), name="data")
            w = te.placeholder((16, 8, 3, 3), name="kernel")
            y = topi.conv2d_nchw(x, w, 1, 1)
            build(schedules.schedule_conv2d_nchw(y), [x, w, y], name="conv2d_nchw")
        else:
            task = autotvm.task.create(*VDLA_CONV, "vdla")
            s, args = task.instantiate(task.fallback())
            build(s, args, target="vdla", name="conv2d", config=s.vdla_config)
            task = autotvm.task.create(*LLVM_CONV, "llvm")
            s, args = task.instantiate(task.fallback())
            build(s, args, name="conv2d_NCHWc")
            task = autotvm.task.create(*LLVM_NCHW, "llvm")
            s, args = task.instantiate(task.fallback())
            build(s, args, name="conv2d_nchw")
        digests[way] = fp.load(folder)
    assert sum(digests["hand"].values()) >= 3
    assert digests["hand"] == digests["fallback"]


def _record(task, index, cost):  # type: ignore[no-untyped-def]
    return MeasureInput(task, task.config_space.get(index)), MeasureResult([cost], 0, 0.1, 0.0, "", "cycles")


def test_apply_history_best_reaches_plain_schedules() -> None:
    """A schedule called outside any template (as vdla.build's users and the graph compiler call it)
    takes the best record of its workload; without one, the hand pick."""
    task = autotvm.task.create(*VDLA_CONV, "vdla")
    hand = _vdla_hand(VDLA_CONV[1])[0].vdla_knobs
    fb = task.fallback()
    other = next(i for i in range(len(task.config_space))
                 if task.config_space.get(i)["tile_h"].size[-1] != hand.tile_h
                 and task.config_space.get(i)["oc_nthread"].val == 1 and task.config_space.get(i)["h_nthread"].val == 1)
    recs = [_record(task, fb.index, 900.0), _record(task, other, 500.0), _record(task, 0, 700.0)]
    with autotvm.apply_history_best(recs) as ctx:
        assert len(ctx) == 1
        k = _vdla_hand(VDLA_CONV[1])[0].vdla_knobs
    assert k.tile_h == task.config_space.get(other)["tile_h"].size[-1] != hand.tile_h
    assert _vdla_hand(VDLA_CONV[1])[0].vdla_knobs == hand  # the context is gone
    # explicit tiles are honoured even inside a context
    with ApplyConfig(task.config_space.get(other)):
        s, args, cfg = _vdla_hand(VDLA_CONV[1])
        assert s.vdla_knobs.tile_h != hand.tile_h
        data = te.placeholder((1, 2, 8, 8, 1, 16), "int8", name="data")
        K = te.placeholder((2, 2, 3, 3, 16, 16), "int8", name="kernel")
        out = T.conv2d_packed(data, K, 1, 1, config=cfg)
        assert T.schedule_conv2d_packed(out, T.Knobs(tile_h=8), config=cfg).vdla_knobs.tile_h == 8


@pytest.mark.parametrize("name, args, target, match", [
    ("no_such_template", [], "llvm", "unknown template 'no_such_template'; registered: "),
    ("conv2d_NCHWc.x86", LLVM_CONV[1], "vdla", "serves target 'llvm', not 'vdla'"),
    ("conv2d_NCHWc.x86", LLVM_CONV[1], "cuda", "serves target 'llvm', not 'cuda'"),
    ("conv2d_NCHWc.x86", LLVM_CONV[1], "opencl", "unknown target 'opencl'"),
    ("dense.x86", [1, 2], "llvm", "cannot take args"),
])
def test_bad_tasks(name, args, target, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TaskError, match=match):
        autotvm.task.create(name, args, target)


def test_get_config_outside_a_template() -> None:
    with pytest.raises(RuntimeError, match="inside a template"):
        autotvm.get_config()


def test_user_template() -> None:
    @autotvm.template("test_vecadd.llvm")
    def vecadd(n: int):  # type: ignore[no-untyped-def]
        a = te.placeholder((n,), name="a")
        b = te.compute((n,), lambda i: a[i] * 2.0, name="b")
        s = te.create_schedule(b.op)
        cfg = autotvm.get_config()
        cfg.define_split("tile", n, num_outputs=2)
        cfg.define_knob("vec", [False, True])
        xo, xi = cfg["tile"].apply(s, b, b.op.axis[0])
        if cfg["vec"].val:
            s[b].vectorize(xi)
        return s, [a, b]

    task = autotvm.task.create("test_vecadd.llvm", [16], "llvm")
    assert len(task.config_space) == 5 * 2 and task.workload == ["test_vecadd.llvm", [16]]
    s, args = task.instantiate(task.config_space.get(9))
    assert "vectorized" in str(autotvm.features.lower_loops(s, args))

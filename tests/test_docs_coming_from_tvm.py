"""docs/coming_from_tvm.md: every vdla name the page says works resolves, and every TVM name of
this table is on the page (so the page and the table keep saying the same).

Each row is (the TVM spelling the page maps, the vdla object it maps to, as a dotted path:
the longest importable module, then attributes). The tutorials and tests/tvm_programs run the
names; this checks that none of the page's promises is a dangling name."""

from __future__ import annotations

import importlib
import inspect
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "coming_from_tvm.md"

NDARRAY, DEVICE, MODULE = "vdla.runtime.ndarray.NDArray", "vdla.runtime.ndarray.DLDevice", "vdla.runtime.module.ModuleMixin"
STAGE, TARGET, ENV = "vdla.compiler.schedule.primitives.Stage", "vdla.target.Target", "vdla.vta.get_env"
REGION = "vdla.compiler.schedule.tensorize.TensorRegion"

NAMES: list[tuple[str, str]] = [
    # imports
    *[(f"tvm.{m}", f"vdla.{m}") for m in ("te", "tir", "topi", "rpc", "autotvm", "testing", "contrib.utils",
                                          "contrib.clang", "tir.ir_builder", "autotvm.tuner.XGBTuner")],
    ("vta", "vdla.vta"), ("vta.testing.simulator", "vdla.vta.testing.simulator"),
    ("tvm.topi.utils.get_const_tuple", "vdla.topi.utils.get_const_tuple"),
    ("tvm.topi.utils.get_const_tuple", "vdla.compiler.topi.util.get_const_tuple"),
    # arrays, devices, modules
    *[(f"tvm.{n}", f"vdla.{n}") for n in ("device", "cpu", "cuda", "ext_dev", "nd.array", "nd.empty",
                                          "register_func", "get_global_func", "runtime.load_module",
                                          "runtime.enabled", "contrib.utils.tempdir", "contrib.clang.create_llvm",
                                          "contrib.cblas.matmul", "testing.assert_allclose",
                                          "testing.device_enabled", "testing.enabled_targets",
                                          "testing.requires_cuda", "testing.main", "rpc.LocalSession")],
    *[(f"dev.{n}", f"{DEVICE}.{n}") for n in ("exist", "device_type", "device_id", "sync")],
    *[(f"arr.{n}", f"{NDARRAY}.{n}") for n in ("numpy", "shape", "dtype", "copyfrom", "copyto")],
    ("arr[:] = x", f"{NDARRAY}.__setitem__"), ("f[name]", f"{MODULE}.__getitem__"),
    *[(f"f.{n}", f"{MODULE}.{n}") for n in ("entry_name", "get_function", "time_evaluator", "save",
                                            "export_library")],
    ("f.get_source", "vdla.compiler.targets.llvm.module.BuiltFunction.get_source"),
    ("f.get_source", "vdla.compiler.targets.vdla.module.VDLAFunction.get_source"),
    ("disassemble", "vdla.compiler.targets.vdla.module.VDLAFunction.disassemble"),
    *[(f"rpc.LocalSession().{n}", f"vdla.rpc.LocalSession.{n}") for n in ("upload", "load_module", "ext_dev", "cpu")],
    ("set_ext_dev_backend", "vdla.runtime.ndarray.set_ext_dev_backend"),
    # building
    ("tvm.lower", "vdla.lower"), ("tvm.build", "vdla.build"), ("tvm.transform.PassContext", "vdla.transform.PassContext"),
    ("tvm.target.Target", TARGET), ("Target.keys", f"{TARGET}.keys"), ("with Target", f"{TARGET}.__enter__"),
    # tensor expressions and schedules
    *[(f"te.{n}", f"vdla.te.{n}") for n in ("placeholder", "compute", "var", "reduce_axis", "sum", "max", "min",
                                            "comm_reducer", "scan", "thread_axis", "extern", "create_schedule",
                                            "decl_tensor_intrin")],
    ("rfactor", "vdla.compiler.schedule.primitives.Schedule.rfactor"),
    *[(n, f"{STAGE}.{n}") for n in ("split", "tile", "fuse", "reorder", "compute_at", "compute_inline",
                                    "compute_root", "vectorize", "unroll", "parallel", "bind", "pragma",
                                    "tensorize", "set_scope", "set_store_predicate")],
    *[(n, f"vdla.compiler.schedule.primitives.Schedule.{n}") for n in ("cache_read", "cache_write")],
    *[(n, f"{REGION}.{n}") for n in ("access_ptr", "strides", "elem_offset", "vload", "vstore")],
    # tvm.tir
    *[(f"tir.{n}", f"vdla.tir.{n}") for n in ("call_extern", "call_pure_extern", "call_intrin", "call_packed",
                                              "indexdiv", "indexmod", "floordiv", "floormod", "truncdiv", "truncmod",
                                              "shift_left", "shift_right", "const", "decl_buffer", "exp",
                                              "if_then_else", "Select", "IntImm", "FloatImm", "Cast", "Var")],
    *[(f"ir_builder.{n}", f"vdla.tir.ir_builder.IRBuilder.{n}") for n in (
        "for_range", "if_scope", "else_scope", "new_scope", "buffer_ptr", "allocate", "let", "scope_attr", "emit",
        "get")],
    ("ir_builder.create", "vdla.tir.ir_builder.create"),
    ("tir.Call", "vdla.tir.Call"), ("tir.CallEffectKind.Pure", "vdla.tir.CallEffectKind.Pure"),
    ("op.op.name", "vdla.compiler.tir.nodes.Call.op"), ("tx.var.equal", "vdla.compiler.tir.nodes.ExprOp.equal"),
    *[(f"tvm.ir.{n}", f"vdla.ir.{n}") for n in ("register_op_attr", "register_intrin_lowering")],
    ("f.imported_modules", "vdla.compiler.targets.cuda.module.CUDAModule.imported_modules"),
    ("get_source", "vdla.runtime.module.DeviceSourceModule.get_source"),
    # VTA
    ("vta.get_env", ENV), ("vta.get_env", "vdla.compiler.targets.vdla.env.get_env"),
    *[(f"vta.{n}", f"vdla.vta.{n}") for n in ("build_config", "build", "lower", "program_fpga", "reconfig_runtime",
                                              "testing.run", "testing.simulator.clear_stats",
                                              "testing.simulator.stats", "testing.simulator.debug_mode")],
    # AutoTVM
    *[(f"autotvm.{n}", f"vdla.autotvm.{n}") for n in (
        "template", "get_config", "ConfigSpace", "ConfigEntity", "FallbackConfigEntity", "task.create",
        "measure_option", "LocalBuilder", "LocalRunner", "tuner.XGBTuner", "tuner.GATuner", "tuner.RandomTuner",
        "tuner.GridSearchTuner", "callback.log_to_file", "callback.progress_bar", "record.load_from_file",
        "record.pick_best", "apply_history_best", "MeasureInput", "MeasureResult", "MeasureErrorNo", "ApplyConfig",
        "DispatchContext")],
    *[(f"cfg.{n}", f"vdla.autotvm.ConfigSpace.{n}") for n in ("define_split", "define_knob", "define_reorder",
                                                              "define_annotate", "add_flop", "get")],
    *[(f"tuner.{n}", f"vdla.autotvm.tuner.Tuner.{n}") for n in ("tune", "load_history")],
    ("apply", "vdla.compiler.autotvm.space.SplitEntity.apply"),
    ("config_space", "vdla.autotvm.Task.config_space"), ("flop", "vdla.autotvm.Task.flop"),
]

#: keyword arguments the page names, per callable
KEYWORDS: list[tuple[str, list[str]]] = [
    (f"{MODULE}.time_evaluator", ["func_name", "dev", "number", "repeat", "min_repeat_ms"]),
    ("vdla.lower", ["name", "simple_mode"]), ("vdla.build", ["target", "name", "target_host"]),
    ("vdla.transform.PassContext", ["opt_level", "disabled_pass"]), (TARGET, ["host"]),
    ("vdla.te.extern", ["name", "dtype", "in_buffers", "out_buffers"]),
    ("vdla.te.decl_tensor_intrin", ["binds"]), ("vdla.te.thread_axis", ["dom", "tag", "name"]),
    ("vdla.ir.register_intrin_lowering", ["target", "f", "level"]), ("vdla.compiler.schedule.primitives.Schedule.rfactor", ["factor_axis"]),
    ("vdla.tir.decl_buffer", ["strides", "offset_factor"]), ("vdla.nd.empty", ["shape", "dtype"]),
    ("vdla.vta.lower", ["simple_mode"]), ("vdla.vta.build", ["target", "name"]),
    ("vdla.autotvm.task.create", ["args", "target"]),
    ("vdla.autotvm.ConfigSpace.define_split", ["num_outputs", "policy", "max_factor", "filter", "candidate"]),
    ("vdla.autotvm.measure_option", ["builder", "runner", "scheduler", "client"]),
    ("vdla.autotvm.LocalBuilder", ["timeout"]), ("vdla.autotvm.LocalRunner", ["number", "repeat", "timeout", "device"]),
    ("vdla.autotvm.tuner.XGBTuner", ["plan_size", "feature_type", "loss_type", "seed"]),
    ("vdla.autotvm.tuner.GATuner", ["pop_size", "elite_num", "mutation_prob", "seed"]),
    ("vdla.autotvm.tuner.Tuner.tune", ["n_trial", "measure_option", "early_stopping", "callbacks"]),
    ("vdla.autotvm.callback.progress_bar", ["prefix"]),
]

#: the env attributes the page lists, checked on a real environment
ENV_ATTRS = ["BATCH", "BLOCK_IN", "BLOCK_OUT", "INP_WIDTH", "WGT_WIDTH", "ACC_WIDTH", "OUT_WIDTH", "inp_dtype",
             "wgt_dtype", "acc_dtype", "out_dtype", "inp_scope", "wgt_scope", "acc_scope", "dma_copy", "alu", "gemm",
             "TARGET", "target", "target_host", "__enter__"]


def resolve(path: str) -> Any:
    """The object at a dotted path: the longest importable module, then attributes (a dataclass
    field without a class default resolves through the class's fields)."""
    parts = path.split(".")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # a path the page names must not be deprecated
        for cut in range(len(parts), 0, -1):
            try:
                obj: Any = importlib.import_module(".".join(parts[:cut]))
                break
            except ModuleNotFoundError:
                continue
        else:
            raise ModuleNotFoundError(path)
    for name in parts[cut:]:
        fields = getattr(obj, "__dataclass_fields__", {})
        obj = fields[name] if not hasattr(obj, name) and name in fields else getattr(obj, name)
    return obj


@pytest.mark.parametrize(("tvm", "vdla"), NAMES, ids=[v for _, v in NAMES])
def test_mapped_name_resolves(tvm: str, vdla: str) -> None:
    assert resolve(vdla) is not None


@pytest.mark.parametrize(("tvm", "vdla"), NAMES, ids=[f"{t}->{v}" for t, v in NAMES])
def test_mapped_name_is_on_the_page(tvm: str, vdla: str) -> None:
    text = PAGE.read_text()
    last = tvm.rsplit(".", 1)[-1].strip("_")
    assert re.search(rf"(?<!\w){re.escape(last)}(?!\w)", text), f"{tvm} ({vdla}) is in this table but not on {PAGE.name}"


@pytest.mark.parametrize(("path", "keywords"), KEYWORDS, ids=[k for k, _ in KEYWORDS])
def test_keywords(path: str, keywords: list[str]) -> None:
    params = inspect.signature(resolve(path)).parameters
    assert not [k for k in keywords if k not in params], f"{path}{inspect.signature(resolve(path))}"


def test_env_names() -> None:
    env = resolve(ENV)()
    missing = [a for a in ENV_ATTRS if not hasattr(env, a)]
    assert not missing, f"vta.get_env() has no {missing}"
    assert env.TARGET == "sim" and env.BATCH >= 1


def test_instance_attributes() -> None:
    """Names the page lists that live on instances, not classes."""
    import numpy as np

    import vdla

    arr = vdla.nd.array(np.arange(3, dtype="float32"), vdla.cpu(0))
    assert arr.device.device_type == vdla.cpu(0).device_type and arr.shape == (3,) and arr.dtype == "float32"
    t = vdla.target.Target("ext_dev", host="llvm")
    assert t.kind.name == "ext_dev" and str(t.host) == "llvm"


def test_tutorials_on_the_page_exist() -> None:
    listed = set(re.findall(r"`(\w+)\.py`", PAGE.read_text()))
    have = {p.stem for p in (PAGE.parent / "tutorials").glob("*.py")}
    assert have <= listed, f"tutorials missing from the page: {sorted(have - listed)}"
    assert {"tune_vdla_matmul", "cocotb_testbench", "build_bitstream"} <= listed & have


def test_packed_functions_by_tvm_name_after_import_vdla() -> None:
    """`tvm.get_global_func("tvm.contrib.cblas.matmul")` works after a plain `import vdla`."""
    import subprocess
    import sys

    code = "import vdla; assert callable(vdla.get_global_func('tvm.contrib.cblas.matmul')); print('ok')"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=PAGE.parents[1])
    assert run.stdout.strip() == "ok", run.stderr[-2000:]


#: what the page says is *not* provided: each must really be absent (or a clear error), or the page is wrong
ABSENT = ["vdla.contrib.cc", "vdla.tir.BufferLoad", "vdla.tir.BufferStore", "vdla.tir.For", "vdla.tir.AttrStmt"]
#: TVM's names the page says vdla does not have, which say what to use instead when used
NOT_SUPPORTED = ["vdla.tir.Schedule", "vdla.te.create_prim_func", "vdla.autotvm.RPCRunner",
                 "vdla.autotvm.measure.RPCRunner", "vdla.rpc.connect"]


@pytest.mark.parametrize("path", ABSENT)
def test_not_provided_is_absent(path: str) -> None:
    with pytest.raises((ImportError, AttributeError)):
        resolve(path)


@pytest.mark.parametrize("path", NOT_SUPPORTED)
def test_not_provided_says_what_to_use(path: str) -> None:
    with pytest.raises(NotImplementedError, match="is not supported in vdla: "):
        resolve(path)("x")


def test_contrib_cc_says_what_to_use() -> None:
    with pytest.raises(ImportError, match="export_library"):
        importlib.import_module("vdla.contrib.cc")


def test_not_provided_env_and_rpc() -> None:
    import vdla.vta as vta
    from vdla import rpc

    env = vta.get_env()
    assert not hasattr(env, "mock") and not hasattr(env, "dev")
    with pytest.raises(RuntimeError, match="serial"):
        rpc.connect("192.168.2.99", 9091)

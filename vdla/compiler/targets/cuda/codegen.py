"""NVPTX code generation: the kernels of a :class:`~.lower.DeviceModule` as one LLVM module, then PTX.

:class:`NVPTXCodegen` is the CPU code generator (:class:`..llvm.codegen.LLVMCodegen`, the
one walk of the loop IR) with the GPU's differences overridden:

* each kernel is a ``ptx_kernel`` function whose ``.maxntid`` is its block size;
* ``threadIdx.x`` .. ``blockIdx.z`` read the NVVM special registers (``llvm.nvvm.read.ptx.sreg.*``);
* ``shared`` allocations are module globals in address space 3; ``local`` ones are
  allocas that LLVM promotes to registers once unrolling makes their indices constant;
* ``__syncthreads()`` is the CTA barrier; contiguous vector accesses whose start is
  provably a multiple of the vector length are aligned to it (``ld.v4``/``st.v4``);
* math functions the NVPTX back end cannot lower (exp, log, tanh, pow, ...) call
  libdevice's ``__nv_*``, linked in from the ``nvidia-nvvm`` wheel (the ``gpu`` extra); so do
  external calls of CUDA's math functions by name (``call_pure_extern("float32", "expf", x)``;
  an intrinsic such as ``__expf`` is libdevice's fast form, ``__nv_fast_expf``).

:func:`compile_ptx` optimises the module with the NVPTX target machine for one
architecture and returns the PTX text.
"""

from __future__ import annotations

import functools
import glob
import os
import threading

import llvmlite.binding as llvm
from llvmlite import ir

from ...tir import dtypes
from ...tir.nodes import (
    Allocate,
    BinOp,
    Buffer,
    Call,
    CallExtern,
    IntImm,
    PrimFunc,
    Ramp,
    Var,
    make_const,
)
from ...tir.passes.simplify import simplify_expr
from ..llvm.codegen import I32, VOID, CodegenError, LLVMCodegen, llvm_type, storage_type
from .lower import SYNC, DeviceModule, Kernel
from .target import TRIPLE, CudaLimits

_SREG = {"threadIdx": "tid", "blockIdx": "ctaid"}
#: math the NVPTX back end lowers itself; the rest calls libdevice
_NATIVE = {"sqrt", "fabs", "floor", "ceil"}
_LIBDEVICE = {"exp", "log", "tanh", "pow", "exp2", "log2", "sqrt", "fabs", "floor", "ceil"}
_lock = threading.Lock()
_ready = False


class NVPTXCodegen(LLVMCodegen):
    """Generates one kernel into a shared NVPTX ``ir.Module``."""

    def __init__(self, kernel: Kernel, module: ir.Module, math: set[str]) -> None:
        func = PrimFunc(kernel.name, kernel.params, kernel.body, {"shape_vars": []})
        # the base class's state, without its CPU runtime declarations (thread pool, malloc)
        self.func = func
        self.symbol = kernel.name
        self.module = module
        self.env: dict[Var, ir.Value] = {}
        self.bufs: dict[Buffer, ir.Value] = {}
        self.intrinsics: dict[str, ir.Function] = {}
        self.n_tasks = 0
        self.in_parallel = False
        self.param_vars: list[Var] = []
        self.kernel = kernel
        self.thread_vars = {v: tag for tag, v in kernel.thread_vars.items()}
        self.math = math  # libdevice functions used (filled in)
        self.ranges = {v: (0, _extent(kernel, tag) - 1) for tag, v in kernel.thread_vars.items()
                       if tag.startswith("threadIdx")}  # fmt: skip

    def declare_function(self, types: list[ir.Type]) -> ir.Function:
        fn = ir.Function(self.module, ir.FunctionType(VOID, types), name=self.symbol)
        fn.calling_convention = "ptx_kernel"
        return fn

    # ------------------------------------------------------------------ special registers
    def _e_Var(self, e: Var) -> ir.Value:
        tag = self.thread_vars.get(e)
        if tag is not None and e not in self.env:
            kind, dim = tag.split(".")
            name = f"llvm.nvvm.read.ptx.sreg.{_SREG[kind]}.{dim}"
            fn = self.module.globals.get(name) or ir.Function(self.module, ir.FunctionType(I32, []), name=name)
            self.env[e] = self.ctx.alloca_b.call(fn, [], name=tag.replace(".", "_"))
        return super()._e_Var(e)

    # ------------------------------------------------------------------ memory
    def _s_Allocate(self, s: Allocate) -> None:
        buf = s.buffer
        if buf.scope != "shared":
            super()._s_Allocate(s)
            return
        n = 1
        for d in buf.shape:
            c = simplify_expr(d)
            assert isinstance(c, IntImm)  # checked by the lowering
            n *= c.value
        aty = ir.ArrayType(storage_type(buf.dtype), n)
        gv = ir.GlobalVariable(self.module, aty, name=self.module.get_unique_name(f"{self.symbol}_{_ident(buf.name)}"),
                               addrspace=3)  # fmt: skip
        gv.linkage = "internal"
        gv.initializer = ir.Constant(aty, ir.Undefined)
        gv.align = 16
        gv.type = ir.PointerType(addrspace=3)  # opaque, as the base class's pointers are
        self.bufs[buf] = gv
        self.stmt(s.body)
        del self.bufs[buf]

    def vector_align(self, buf: Buffer, index: Ramp, elem_align: int) -> int:
        n = index.lanes
        want = n * elem_align
        if want & (want - 1) or want > 16:
            return elem_align
        m = simplify_expr(BinOp("floormod", index.base, make_const(n, index.base.dtype), index.base.dtype), self.ranges)
        return want if isinstance(m, IntImm) and m.value == 0 else elem_align

    # ------------------------------------------------------------------ calls
    def _e_CallExtern(self, e: CallExtern) -> ir.Value:
        if e.name == SYNC:
            name = "llvm.nvvm.barrier0"
            fn = self.module.globals.get(name) or ir.Function(self.module, ir.FunctionType(VOID, []), name=name)
            return self.b.call(fn, [])
        sym = libdevice_symbol(e.name)
        if sym is None:
            raise CodegenError(f"kernel {self.symbol!r}: cannot call external function {e.name!r} on the GPU (the "
                               "GPU calls CUDA's math functions, e.g. 'expf', '__expf', 'logf', from libdevice)")
        ret, params = libdevice_functions()[sym]
        got = [str(llvm_type(a.dtype)) for a in e.args]
        want_ret = "void" if e.dtype == "void" else str(llvm_type(e.dtype))
        if got != params or want_ret != ret:
            raise CodegenError(f"kernel {self.symbol!r}: {e.name} on the GPU ({sym}) takes ({', '.join(params)}) and "
                               f"returns {ret}; the call passes ({', '.join(got)}) and returns {want_ret}")
        fn = self.module.globals.get(sym) or ir.Function(
            self.module, ir.FunctionType(llvm_type(e.dtype) if e.dtype != "void" else VOID,
                                         [llvm_type(a.dtype) for a in e.args]), name=sym)  # fmt: skip
        self.math.add(sym)
        return self.b.call(fn, [self.expr(a) for a in e.args])

    def _e_Call(self, e: Call) -> ir.Value:
        if e.name not in _LIBDEVICE and e.name not in ("shift_right", "shift_left"):
            raise CodegenError(f"kernel {self.symbol!r}: tir.{e.name} has no lowering for cuda; give it one with "
                               f"tvm.ir.register_intrin_lowering('tir.{e.name}', target='cuda', f=rule)")
        if not dtypes.is_float(e.dtype) or e.name not in _LIBDEVICE:
            return super()._e_Call(e)
        base, lanes = dtypes.split(e.dtype)
        if base not in ("float32", "float64"):
            raise CodegenError(f"{e.name} of {base} is not supported on the GPU (use float32 or float64)")
        if e.name in _NATIVE:
            return super()._e_Call(e)
        sym = f"__nv_{e.name}{'f' if base == 'float32' else ''}"
        sty = llvm_type(base)
        fn = self.module.globals.get(sym) or ir.Function(self.module, ir.FunctionType(sty, [sty] * len(e.args)), name=sym)
        self.math.add(sym)
        args = [self.expr(a) for a in e.args]
        if lanes == 1:
            return self.b.call(fn, args)
        out: ir.Value = ir.Constant(llvm_type(e.dtype), ir.Undefined)
        for k in range(lanes):
            lane = [self.b.extract_element(a, ir.Constant(I32, k)) for a in args]
            out = self.b.insert_element(out, self.b.call(fn, lane), ir.Constant(I32, k))
        return out


@functools.cache
def libdevice_functions() -> dict[str, tuple[str, list[str]]]:
    """libdevice's ``__nv_*`` functions: name -> (return type, parameter types) as LLVM spells them
    (empty without libdevice)."""
    code = _libdevice_bitcode()
    if code is None:
        return {}
    _init()
    lib = llvm.parse_bitcode(code)
    out = {}
    for fn in lib.functions:
        if fn.name.startswith("__nv_"):
            fty = fn.global_value_type
            out[fn.name] = (str(fty.return_type) if hasattr(fty, "return_type") else str(fty).split(" (")[0],
                            [str(a.type) for a in fn.arguments])
    return out


def libdevice_symbol(name: str) -> str | None:
    """The libdevice function behind a CUDA math call: ``expf`` -> ``__nv_expf``; an intrinsic
    ``__expf`` -> ``__nv_fast_expf`` (its fast, approximate form), ``__fmul_rn`` -> ``__nv_fmul_rn``;
    ``__nv_expf`` itself. None when libdevice has no such function."""
    fns = libdevice_functions()
    if not fns:
        raise CodegenError(f"{name} on the GPU needs libdevice: install the nvidia-nvvm wheel (pip install 'vdla[gpu]')")
    if name.startswith("__nv_"):  # libdevice's own name
        cands = [name]
    elif name.startswith("__"):
        cands = [f"__nv_fast_{name[2:]}", f"__nv_{name[2:]}"]
    else:
        cands = [f"__nv_{name}"]
    return next((c for c in cands if c in fns), None)


def _extent(kernel: Kernel, tag: str) -> int:
    return kernel.block["xyz".index(tag[-1])]


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def generate(dev: DeviceModule) -> tuple[ir.Module, set[str]]:
    """One NVPTX module with every kernel of ``dev``; also the libdevice functions it calls."""
    module = ir.Module(name=dev.func.name)
    module.triple = TRIPLE
    math: set[str] = set()
    md = []
    for k in dev.kernels:
        cg = NVPTXCodegen(k, module, math)
        cg.generate()
        fn = module.globals[k.name]
        # the block size bounds register allocation (ptxas .maxntid)
        md.append(module.add_metadata([fn, "maxntidx", ir.Constant(I32, k.block[0])]))
        md.append(module.add_metadata([fn, "maxntidy", ir.Constant(I32, k.block[1])]))
        md.append(module.add_metadata([fn, "maxntidz", ir.Constant(I32, k.block[2])]))
    nm = module.add_named_metadata("nvvm.annotations")
    for m in md:
        nm.add(m)
    return module, math


@functools.cache
def libdevice_path() -> str | None:
    """libdevice.10.bc from the nvidia-nvvm wheel (or $CUDA_HOME/nvvm/libdevice)."""
    roots: list[str] = []
    try:
        import nvidia

        roots = [os.path.join(r, "*") for r in nvidia.__path__]
    except ImportError:
        pass
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        roots.append(home)
    for r in roots:
        hits = sorted(glob.glob(os.path.join(r, "nvvm", "libdevice", "libdevice*.bc")))
        if hits:
            return hits[-1]
    return None


def _init() -> None:
    global _ready
    with _lock:
        if not _ready:
            llvm.initialize_all_targets()
            llvm.initialize_all_asmprinters()
            _ready = True


def target_machine(target: CudaLimits, opt: int = 3) -> llvm.TargetMachine:
    _init()
    t = llvm.Target.from_triple(TRIPLE)
    return t.create_target_machine(cpu=target.arch, features=f"+{target.ptx_version}", opt=opt)


@functools.cache
def _libdevice_bitcode() -> bytes | None:
    path = libdevice_path()
    if path is None:
        return None
    with open(path, "rb") as fh:
        return fh.read()


def compile_ptx(llvm_ir: str, math: set[str], target: CudaLimits, opt_level: int = 3,
                kernels: tuple[str, ...] = ()) -> tuple[str, str]:  # fmt: skip
    """Optimise ``llvm_ir`` for ``target`` and emit PTX; returns (optimised IR, PTX).

    ``kernels`` are the entry points; everything else (libdevice) is made internal so the
    optimiser inlines what is called and drops the rest."""
    tm = target_machine(target, opt_level)
    mod = llvm.parse_assembly(llvm_ir)
    mod.data_layout = str(tm.target_data)
    if math:
        code = _libdevice_bitcode()
        if code is None:
            raise CodegenError(
                f"{', '.join(sorted(math))} on the GPU need libdevice: install the nvidia-nvvm wheel "
                "(pip install 'vdla[gpu]')"
            )
        lib = llvm.parse_bitcode(code)
        lib.triple = TRIPLE
        lib.data_layout = mod.data_layout
        mod.link_in(lib)
        for g in list(mod.functions) + list(mod.global_variables):
            if not g.is_declaration and g.name not in kernels:
                g.linkage = llvm.Linkage.internal
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    pto.loop_unrolling = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    if math:  # drop the ~350 libdevice functions nothing calls before the pipeline optimises them all
        dce = llvm.create_new_module_pass_manager()
        dce.add_global_dead_code_eliminate_pass()
        dce.run(mod, pb)
    pb.getModulePassManager().run(mod, pb)
    return str(mod), tm.emit_assembly(mod)

"""The GPU back end: target ``"cuda"`` (or ``"nvptx"``, ``"cuda -arch=sm_90"``) through llvmlite's NVPTX.

    s[C].bind(bx, te.thread_axis("blockIdx.x")); s[C].bind(tx, te.thread_axis("threadIdx.x"))
    f = vdla.build(s, [A, B, C], target="cuda")     # PTX; f.get_source("ptx")
    f(a, b, c)                                       # on the GPU (numpy arrays copied in and out)

Modules: backend (what the driver calls), target (CudaLimits: a target's architecture and
per-block limits), lower (host/device split, thread binding, shared-memory barriers), codegen
(the LLVM code generator specialised for NVPTX: special registers, address space 3,
libdevice), module (the built function), runtime (the driver API through cuda-bindings;
imported only when a kernel runs), ptxas (assembling PTX to prove it valid without a GPU),
schedules/ (GPU operator schedules, TVM's topi.cuda).
"""

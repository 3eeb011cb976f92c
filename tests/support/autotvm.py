"""Small autotvm tasks the tests share (tiny spaces: fast to build and measure)."""

VDLA_CONV = ["conv2d_packed.vdla", [[1, 2, 8, 8, 1, 16], [2, 2, 3, 3, 16, 16], [1, 1], [1, 1, 1, 1], True, False,
                                    "default"]]
VDLA_DENSE = ["dense_packed.vdla", [[1, 4, 1, 16], [4, 4, 16, 16], True, False, "default"]]
LLVM_CONV = ["conv2d_NCHWc.x86", [1, 32, 8, 8, 32, 3, 1, 1]]

"""Invalid schedules raise ScheduleError naming the stage and the axis."""

from __future__ import annotations

import pytest

from vdla.compiler import ScheduleError, lower, te


def _matmul(n: int = 16) -> tuple[te.Tensor, te.Tensor, te.Tensor, te.IterVar]:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C, k


def test_split_same_axis_twice() -> None:
    _, _, C, _ = _matmul()
    s = te.create_schedule(C.op)
    i = C.op.axis[0]
    s[C].split(i, factor=4)
    with pytest.raises(ScheduleError, match=r"stage 'C': split: axis 'i' is no longer a loop"):
        s[C].split(i, factor=2)


def test_split_fused_axis_parts_twice() -> None:
    _, _, C, _ = _matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    f = s[C].fuse(i, j)
    s[C].split(f, factor=8)
    with pytest.raises(ScheduleError, match=r"stage 'C'.*'i.j.fused'"):
        s[C].split(f, factor=4)
    with pytest.raises(ScheduleError, match=r"stage 'C'.*axis 'j' is no longer a loop"):
        s[C].vectorize(j)


def test_split_bad_factor() -> None:
    _, _, C, _ = _matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="factor must be positive"):
        s[C].split(C.op.axis[0], factor=0)
    with pytest.raises(ScheduleError, match="exactly one of factor= or nparts="):
        s[C].split(C.op.axis[0], factor=2, nparts=2)


def test_fuse_not_adjacent() -> None:
    _, _, C, k = _matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    with pytest.raises(
        ScheduleError, match=r"stage 'C': fuse: axes 'i' \(loop 0\) and 'k' \(loop 2\) are not adjacent"
    ):
        s[C].fuse(i, k)


def test_fuse_reduce_with_data() -> None:
    _, _, C, k = _matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    with pytest.raises(ScheduleError, match="cannot fuse data_par axis 'j' with reduce axis 'k'"):
        s[C].fuse(j, k)


def test_axis_of_other_stage() -> None:
    A, _, C, _ = _matmul()
    D = te.compute((16, 16), lambda i, j: C[i, j] + 1.0, name="D")
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match=r"stage 'D': reorder: axis 'i' does not belong to this stage"):
        s[D].reorder(C.op.axis[0])


def test_reorder_duplicate() -> None:
    _, _, C, _ = _matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    with pytest.raises(ScheduleError, match="axis 'i' is given more than once"):
        s[C].reorder(i, i)


def test_compute_at_outside_consumer() -> None:
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((8,), lambda i: A[i] * 2.0, name="C")
    D = te.compute((8,), lambda i: B[i] + C[i], name="D")
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match=r"stage 'B': compute_at: stage 'C' does not read 'B'"):
        s[B].compute_at(s[C], C.op.axis[0])
    with pytest.raises(ScheduleError, match=r"stage 'D': compute_at\(B\): axis 'i' does not belong"):
        s[B].compute_at(s[D], C.op.axis[0])


def test_compute_at_output() -> None:
    _, _, C, _ = _matmul()
    D = te.compute((16, 16), lambda i, j: C[i, j] + 1.0, name="D")
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match="stage 'D': compute_at: it is an output"):
        s[D].compute_at(s[C], C.op.axis[0])


def test_compute_at_with_other_readers() -> None:
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((8,), lambda i: B[i] * 2.0, name="C")
    D = te.compute((8,), lambda i: B[i] + C[i], name="D")
    s = te.create_schedule(D.op)
    s[B].compute_at(s[C], C.op.axis[0])
    with pytest.raises(ScheduleError, match=r"stage 'B': it is computed at 'C' \(axis 'i'\) but is also read by 'D'"):
        lower(s, [A, D])


def test_inline_reduction_and_output() -> None:
    A, B, C, _ = _matmul()
    D = te.compute((16, 16), lambda i, j: C[i, j] + 1.0, name="D")
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match="stage 'C': compute_inline: it is a reduction"):
        s[C].compute_inline()
    with pytest.raises(ScheduleError, match="stage 'D': compute_inline: it is an output"):
        s[D].compute_inline()


def test_parallel_reduce_axis() -> None:
    _, _, C, k = _matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="stage 'C': parallel: axis 'k' is a reduction axis"):
        s[C].parallel(k)


def test_conflicting_annotations() -> None:
    _, _, C, _ = _matmul()
    s = te.create_schedule(C.op)
    j = C.op.axis[1]
    s[C].vectorize(j)
    with pytest.raises(ScheduleError, match="stage 'C': unroll: axis 'j' is already marked vectorize"):
        s[C].unroll(j)


def test_placeholder_stage_has_no_loops() -> None:
    A, _, C, _ = _matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="stage 'A'.*placeholder"):
        s[A].split(A.op.outputs[0].op.outputs[0].shape[0], factor=2)  # type: ignore[arg-type]


def test_bind_needs_thread_axis() -> None:
    _, _, C, _ = _matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="is not a thread axis"):
        s[C].bind(C.op.axis[0], C.op.axis[1])


def test_vectorize_symbolic_extent() -> None:
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    with pytest.raises(
        ScheduleError, match=r"stage 'B': axis 'i' is marked vectorize but its extent n is not a constant"
    ):
        lower(s, [A, B])


def test_args_errors() -> None:
    A, B, C, _ = _matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="placeholder 'B' is read by stage 'C' but is not in the argument list"):
        lower(s, [A, C])
    with pytest.raises(
        ScheduleError, match="stage 'C': it is an output of the schedule but is not in the argument list"
    ):
        lower(s, [A, B])
    with pytest.raises(ScheduleError, match="given twice"):
        lower(s, [A, A, B, C])


def test_cache_write_after_scheduling() -> None:
    _, _, C, _ = _matmul()
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    with pytest.raises(ScheduleError, match="stage 'C': cache_write must be called before"):
        s.cache_write(C, "local")


def test_create_schedule_of_placeholder() -> None:
    A = te.placeholder((4,), name="A")
    with pytest.raises(ScheduleError, match="placeholder"):
        te.create_schedule(A.op)

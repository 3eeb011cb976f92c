"""Operator library: tensor-expression declarations with default CPU schedules."""

from .matmul import matmul, schedule_matmul_cpu

__all__ = ["matmul", "schedule_matmul_cpu"]

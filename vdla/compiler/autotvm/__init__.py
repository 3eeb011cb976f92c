"""Learning-based auto-tuning with AutoTVM's names (``vdla.autotvm`` is this package)::

    from vdla import autotvm
    task = autotvm.task.create("conv2d_packed.vdla", args, target="vdla")
    tuner = autotvm.tuner.XGBTuner(task)
    tuner.tune(n_trial=64, measure_option=autotvm.measure_option(
        builder=autotvm.LocalBuilder(timeout=10), runner=autotvm.LocalRunner(number=3, repeat=1, timeout=10)),
        callbacks=[autotvm.callback.log_to_file("c2.log"), autotvm.callback.progress_bar(64)])
    with autotvm.apply_history_best("c2.log"):
        vdla.build(...)          # the templates' schedules use the best record of their workload

Modules: :mod:`.space` (ConfigSpace / ConfigEntity), :mod:`.dispatch` (get_config, dispatch
contexts), :mod:`.task` (@template, create), :mod:`.templates` (the operator library's),
:mod:`.measure` (builders, runners, measuring on Dask workers; :mod:`.measure_cuda` for the GPU), :mod:`.features` (loop-IR
features), :mod:`.tuner` (random, grid, GA, XGBoost), :mod:`.record` (JSON-lines logs,
apply_history_best), :mod:`.tuning` (a model's tasks, tuning them into a log; the
``vdla tune`` command over it is `vdla.cli.tune`).
"""

from ...compat.aliases import module_getattr
from . import callback, measure_cuda, record, task, tuner
from .dispatch import ApplyConfig, DispatchContext, get_config
from .measure import LocalBuilder, LocalRunner, MeasureErrorNo, MeasureInput, MeasureResult, measure_option
from .record import ApplyHistoryBest, apply_history_best
from .space import ConfigEntity, ConfigSpace, FallbackConfigEntity, KnobError
from .task import Task, TaskError, template

__all__ = [
    "task", "tuner", "record", "callback", "measure_cuda", "template", "get_config", "Task", "TaskError", "ConfigSpace",
    "ConfigEntity", "FallbackConfigEntity", "KnobError", "DispatchContext", "ApplyConfig", "LocalBuilder",
    "LocalRunner", "MeasureErrorNo", "MeasureInput", "MeasureResult", "measure_option", "ApplyHistoryBest",
    "apply_history_best",
]

__getattr__ = module_getattr(__name__)  # TVM's names vdla does not have (RPCRunner) say what to use instead

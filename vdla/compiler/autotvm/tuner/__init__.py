"""Tuners: :class:`RandomTuner`, :class:`GridSearchTuner`, :class:`GATuner`, :class:`XGBTuner`
(all :class:`Tuner`: ``tune(n_trial, measure_option, callbacks=[...])``)."""

from .ga_tuner import GATuner
from .sampling import GridSearchTuner, RandomTuner
from .tuner import Tuner
from .xgb_tuner import XGBTuner

__all__ = ["Tuner", "RandomTuner", "GridSearchTuner", "GATuner", "XGBTuner"]

"""router.training: teaching the router from labelled queries. `toolsift tune` (tune, with its
batches and hard negatives in tune_batches), the labelled queries it reads (labelled), and the usage
log the proxy writes for it (usage_log). Above the ranking: it trains what the engine routes with.
"""
from .labelled import LabelledQuery, LabelledSet, load_labelled
from .tune import TuneConfig, TuneReport, tune
from .usage_log import UsageLog

__all__ = ["LabelledQuery", "LabelledSet", "TuneConfig", "TuneReport", "UsageLog", "load_labelled", "tune"]

"""router.agent: the reference tool-calling loop, built on the router and the checker.

    result = run(client, messages, router, execute={"get_weather": get_weather}, model="gpt-4o-mini")
    result.answer, result.stop_reason, result.calls

Native function calling, or prompt + JSON and ReAct for models without it (see `loop`).
Everything else in this package is internal.
"""
from .errors import AgentError
from .loop import STOP_REASONS, run
from .toolbox import SEARCH_TOOL
from .trace import CallTrace, LoopResult, RoundTrace

__all__ = ["AgentError", "CallTrace", "LoopResult", "RoundTrace", "SEARCH_TOOL", "STOP_REASONS", "run"]

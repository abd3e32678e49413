"""LlamaIndex with toolsift inside: a FunctionAgent whose tool_retriever ranks 370 real Python functions, driven
by the scripted model (conftest.py) through LlamaIndex's LiteLLM chat model pointed at the scripted server.
Repeated with routing effectively off (k = every tool) to show the scripted model then cannot finish."""
from __future__ import annotations

import asyncio
import os

import pytest

from router.frameworks import FrameworkError, ToolRegistry
from tests.support.scripted_upstream import ScriptedUpstream

from .conftest import FINISHED, STEPS, TASK, TOO_MANY, AgentModel

pytest.importorskip("llama_index.core", reason="the llamaindex extra is not installed (pip install -e '.[llamaindex]')")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LiteLLM must not fetch its price list
litellm_llm = pytest.importorskip("llama_index.llms.litellm", reason="the integration extra is not installed")

K = 5
NEEDED = {name: args for name, _, args in STEPS}


def _run(up: ScriptedUpstream, functions, k: int, emb_cache) -> tuple[str, list]:
    from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult

    from router.frameworks.llamaindex import tool_retriever

    # a model LiteLLM knows calls functions (LlamaIndex asks it), served by the scripted server
    llm = litellm_llm.LiteLLM(model="openai/gpt-4o-mini", api_base=up.base_url, api_key="sk-test",
                              max_retries=0)
    agent = FunctionAgent(tool_retriever=tool_retriever(ToolRegistry(functions, cache_dir=emb_cache), k=k), llm=llm)

    async def go():
        handler = agent.run(user_msg=TASK)
        ran = [ev async for ev in handler.stream_events() if isinstance(ev, ToolCallResult)]
        return str(await handler), ran

    return asyncio.run(go())


def _ran_both(results) -> bool:
    ran = {r.tool_name: {k: v for k, v in r.tool_output.raw_output["arguments"].items() if v is not None}
           for r in results if isinstance(r.tool_output.raw_output, dict)}
    return ran == NEEDED


@pytest.mark.slow
def test_function_agent_with_the_retriever_finishes(bfcl_functions, emb_cache):
    model = AgentModel(max_offered=K)
    with ScriptedUpstream(model) as up:
        answer, ran = _run(up, bfcl_functions, K, emb_cache)
    assert answer == FINISHED, answer
    assert _ran_both(ran)  # the retriever also handed the agent each called tool to run
    assert model.refused == 0 and model.offered and all(len(o) <= K for o in model.offered)


@pytest.mark.slow
def test_function_agent_cannot_finish_without_routing(bfcl_functions, emb_cache):
    model = AgentModel(max_offered=K)
    with ScriptedUpstream(model) as up:
        answer, ran = _run(up, bfcl_functions, len(bfcl_functions), emb_cache)
    assert answer.startswith(TOO_MANY) and not ran


def test_the_retriever_returns_llamaindex_tools_and_the_named_one_first(bfcl_functions):
    from llama_index.core.objects import ObjectRetriever
    from llama_index.core.tools import FunctionTool

    from router.frameworks.llamaindex import tool_retriever

    fts = [FunctionTool.from_defaults(fn=fn) for fn in bfcl_functions[:50]]
    retriever = tool_retriever(fts, k=2, method="bm25")
    assert isinstance(retriever, ObjectRetriever)
    got = retriever.retrieve("calculate the factorial of 5")
    assert len(got) == 2 and got[0] is fts[1]  # the FunctionTool itself, not a copy
    # how the agent finds the tool the model called: by its name
    assert asyncio.run(retriever.aretrieve("calculate_triangle_area"))[0] is fts[0]
    assert retriever.retrieve("") == []
    # plain functions are wrapped in a FunctionTool once
    plain = tool_retriever(bfcl_functions[:50], k=1, method="bm25")
    first = plain.retrieve("factorial")[0]
    assert isinstance(first, FunctionTool) and first.metadata.name == "math_factorial"
    assert plain.retrieve("factorial of a number")[0] is first
    with pytest.raises(FrameworkError, match="k must be a positive integer"):
        tool_retriever(fts, k=0)

"""LangGraph with toolsift inside: langgraph-bigtool's agent over 370 registered Python functions, and the
prebuilt ReAct agent with the routed model, both driven by the scripted model through langchain-openai's
ChatOpenAI (see conftest.py). Each run is repeated with routing effectively off (k = every tool) to show
the scripted model then cannot finish."""
from __future__ import annotations

import asyncio
import uuid

import pytest

from router.frameworks import FrameworkError, ToolRegistry
from tests.support.scripted_upstream import ScriptedUpstream

from .conftest import FINISHED, STEPS, TASK, TOO_MANY, AgentModel, executed

pytest.importorskip("langgraph_bigtool", reason="the langgraph extra is not installed (pip install -e '.[langgraph]')")
from langchain_openai import ChatOpenAI  # noqa: E402  (after the skip: the extra brings langchain-core)

K = 3          # bigtool: tools per retrieval
K_REACT = 5    # the prebuilt agent: ranked tools per model call
NEEDED = {name: args for name, _, args in STEPS}


def _llm(up: ScriptedUpstream) -> ChatOpenAI:
    return ChatOpenAI(model="scripted-model", base_url=up.base_url, api_key="sk-test", max_retries=0)


def _ran_both(messages) -> bool:
    ran = {r["tool"]: {k: v for k, v in r["arguments"].items() if v is not None} for r in executed(messages)}
    return ran == NEEDED


# ---------------------------------------------------------------- langgraph-bigtool

def _bigtool_agent(up, functions, k, emb_cache):
    from langgraph_bigtool import create_agent

    from router.frameworks.langgraph import bigtool_retriever

    tool_registry = {str(uuid.uuid4()): fn for fn in functions}  # bigtool's own registry shape
    registry = ToolRegistry(tool_registry, cache_dir=emb_cache)
    retrieve, aretrieve = bigtool_retriever(registry, k=k)
    return create_agent(_llm(up), tool_registry, retrieve_tools_function=retrieve,
                        retrieve_tools_coroutine=aretrieve).compile()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_bigtool_agent_finishes_a_two_tool_task_over_370_functions(bfcl_functions, emb_cache, mode):
    # the model may hold the retriever and the tools two retrievals of k brought, nothing more
    model = AgentModel(max_offered=1 + 2 * K, retriever="retrieve_tools")
    with ScriptedUpstream(model) as up:
        agent = _bigtool_agent(up, bfcl_functions, K, emb_cache)
        state = {"messages": [("user", TASK)]}
        out = agent.invoke(state) if mode == "sync" else asyncio.run(agent.ainvoke(state))
    assert out["messages"][-1].content == FINISHED, [m.content for m in out["messages"]]
    assert _ran_both(out["messages"])
    assert model.refused == 0 and all(len(o) <= 1 + 2 * K for o in model.offered)
    assert len(out["selected_tool_ids"]) <= 2 * K


@pytest.mark.slow
def test_bigtool_agent_cannot_finish_without_routing(bfcl_functions, emb_cache):
    model = AgentModel(max_offered=1 + 2 * K, retriever="retrieve_tools")
    with ScriptedUpstream(model) as up:  # k = every tool: the retriever hands back the whole registry
        agent = _bigtool_agent(up, bfcl_functions, len(bfcl_functions), emb_cache)
        out = agent.invoke({"messages": [("user", TASK)]})
    assert out["messages"][-1].content.startswith(TOO_MANY) and not _ran_both(out["messages"])


# ---------------------------------------------------------------- the prebuilt ReAct agent

def _react_agent(up, functions, k, emb_cache, **options):
    from langgraph.prebuilt import create_react_agent

    from router.frameworks.langgraph import routed_model

    model = routed_model(_llm(up), ToolRegistry(functions, cache_dir=emb_cache), k=k, **options)
    return create_react_agent(model, functions), model


@pytest.mark.slow
def test_prebuilt_agent_binds_at_most_k_tools_per_call_and_finishes(bfcl_functions, emb_cache):
    # k ranked tools, plus the tools the conversation already called (kept, as by the proxy); the model
    # calls both tools at once when both are offered
    model = AgentModel(max_offered=K_REACT + len(STEPS), parallel=True)
    with ScriptedUpstream(model) as up:
        agent, routed = _react_agent(up, bfcl_functions, K_REACT, emb_cache)
        out = agent.invoke({"messages": [("user", TASK)]})
    assert out["messages"][-1].content == FINISHED, [m.content for m in out["messages"]]
    assert _ran_both(out["messages"])
    assert len(model.offered) == len(routed.bindings) == 2  # the calls, then the answer
    for binding, offered in zip(routed.bindings, model.offered):
        ranked = [n for n in binding.tools if binding.reasons[n] != "history"]
        assert len(ranked) <= K_REACT and list(binding.tools) == offered
    # the second call is routed on the whole conversation and keeps the tools it already called
    assert {name for name, _, _ in STEPS} <= set(routed.bindings[1].tools)


@pytest.mark.slow
def test_prebuilt_agent_async_routed_model_finishes(bfcl_functions, emb_cache):
    model = AgentModel(max_offered=K_REACT + len(STEPS), parallel=True)
    with ScriptedUpstream(model) as up:
        agent, arouted = _react_agent(up, bfcl_functions, K_REACT, emb_cache, asynchronous=True)
        out = asyncio.run(agent.ainvoke({"messages": [("user", TASK)]}))
    assert out["messages"][-1].content == FINISHED and _ran_both(out["messages"])
    assert [list(b.tools) for b in arouted.routed.bindings] == model.offered and model.refused == 0


@pytest.mark.slow
def test_prebuilt_agent_cannot_finish_without_routing(bfcl_functions, emb_cache):
    model = AgentModel(max_offered=K_REACT + len(STEPS), parallel=True)
    with ScriptedUpstream(model) as up:
        agent, _ = _react_agent(up, bfcl_functions, len(bfcl_functions), emb_cache)
        out = agent.invoke({"messages": [("user", TASK)]})
    assert out["messages"][-1].content.startswith(TOO_MANY) and not _ran_both(out["messages"])


def test_routed_model_keeps_pins_tool_choice_history_and_control_tools(bfcl_functions):
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from router.frameworks.langgraph import routed_model

    def transfer_to_billing(reason: str) -> str:
        """Hand the conversation to the billing agent."""
        return reason

    tools = [*bfcl_functions, transfer_to_billing]
    llm = ChatOpenAI(model="m", base_url="http://127.0.0.1:9/v1", api_key="sk-test")  # never called here
    routed = routed_model(llm, ToolRegistry(tools, dense=False), k=2, pinned=["math_factorial"],
                          tool_choice="calculate_triangle_area")
    messages = [HumanMessage("what is the area of a circle of radius 3"),
                AIMessage("", tool_calls=[{"name": "not_a_registry_tool", "args": {}, "id": "c1"}]),
                ToolMessage("no such tool", tool_call_id="c1"),
                AIMessage("", tool_calls=[{"name": "math_hypot", "args": {"x": 3, "y": 4}, "id": "c2"}]),
                ToolMessage("5", tool_call_id="c2")]
    b = routed.route(messages)
    assert b.tools[0] == "math_factorial" and b.reasons["math_factorial"] == "pinned"
    assert sum(r in ("ranked", "named") for r in b.reasons.values()) == 2
    assert b.reasons["transfer_to_billing"] == "control"
    assert b.reasons["calculate_triangle_area"] in ("tool_choice", "ranked", "named")
    assert "math_hypot" in b.tools and "not_a_registry_tool" not in b.tools  # history: only the registry's tools
    bound = routed({"messages": messages}, None)
    assert [t["function"]["name"] for t in bound.kwargs["tools"]] == list(b.tools)
    assert bound.kwargs["tool_choice"]["function"]["name"] == "calculate_triangle_area"
    with pytest.raises(FrameworkError, match="not one of the registry's tools"):
        routed_model(llm, ToolRegistry(tools, dense=False), k=2, tool_choice="nope").route(messages)
    with pytest.raises(FrameworkError, match="cannot choose tools"):
        routed.route([AIMessage("hello")])
    with pytest.raises(FrameworkError, match="k must be a positive integer"):
        routed_model(llm, tools, k=0)
    from router.frameworks.langgraph import bigtool_retriever

    with pytest.raises(FrameworkError, match="k must be a positive integer"):
        bigtool_retriever(tools, k=True)

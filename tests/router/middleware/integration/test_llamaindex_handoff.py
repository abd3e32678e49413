"""Issue 37, item 4: a real LlamaIndex `AgentWorkflow` whose hand-off the question does not name,
through the installed proxy (`toolsift serve openai`, default settings but -k 3 and BM25) in front of a
scripted model. LlamaIndex adds a ``handoff`` tool that the words of "How much money is left on my
main-checking account?" do not match; routing must keep it, or the front agent never hands over.

The LLM is LlamaIndex's LiteLLM chat model pointed at the proxy (llama-index-llms-openai requires
openai<3, which the pinned openai excludes: pyproject.toml, the integration extra)."""
from __future__ import annotations

import asyncio
import json
import os

import pytest

from tests.support.scripted_apis import answer, offered_tools, tool_results
from tests.support.scripted_upstream import ScriptedUpstream

from .conftest import thirty_tools

pytest.importorskip("llama_index.core", reason="the llamaindex extra is not installed (pip install -e '.[llamaindex]')")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LiteLLM must not fetch its price list
litellm_llm = pytest.importorskip("llama_index.llms.litellm", reason="the integration extra is not installed")

QUESTION = "How much money is left on my main-checking account?"
BANKER_PROMPT = "You are the banker. You answer questions about the user's bank accounts."
BALANCE = "Your main-checking account holds 1,234.56 EUR."


def model(request: dict, api: str) -> dict:
    """The front agent hands over; the banker (known by its system prompt) answers."""
    offered = offered_tools(request, api)
    system = " ".join(str(m.get("content")) for m in request.get("messages") or [] if m.get("role") == "system")
    if BANKER_PROMPT in system:
        return answer(api, BALANCE)
    if "handoff" in offered and not tool_results(request, api):
        return answer(api, None, [("handoff", {"to_agent": "banker", "reason": "a bank balance question"})])
    return answer(api, f"I cannot hand over: no handoff tool among {sorted(offered)}")


def workflow(url: str):
    from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
    from llama_index.core.tools import FunctionTool

    def tool(name: str, description: str) -> FunctionTool:
        def run(query: str) -> str:
            return f"{name} ran"
        return FunctionTool.from_defaults(fn=run, name=name, description=description)

    # a model LiteLLM knows calls functions (LlamaIndex asks it), served by the scripted server
    llm = litellm_llm.LiteLLM(model="openai/gpt-4o-mini", api_base=f"{url}/v1", api_key="sk-test", max_retries=0)
    front = FunctionAgent(name="front_desk", description="Greets the user and handles general requests.",
                          system_prompt="You are the front desk.", llm=llm, can_handoff_to=["banker"],
                          tools=[tool(t["function"]["name"], t["function"]["description"]) for t in thirty_tools()])
    banker = FunctionAgent(name="banker", description="A finance specialist.",
                           system_prompt=BANKER_PROMPT, llm=llm,
                           tools=[tool("account_statement", "The last transactions of a bank account.")])
    return AgentWorkflow(agents=[front, banker], root_agent="front_desk", timeout=60)


def run(url: str) -> tuple[str, list[str]]:
    from llama_index.core.agent.workflow import AgentOutput

    async def go():
        handler = workflow(url).run(user_msg=QUESTION)
        agents = [ev.current_agent_name async for ev in handler.stream_events() if isinstance(ev, AgentOutput)]
        return str(await handler), agents

    return asyncio.run(go())


def test_agent_workflow_hands_off_through_the_installed_proxy(tmp_path):
    from tests.router.middleware.test_conversations import serving

    with ScriptedUpstream(model) as up, serving("openai", up.base_url, tmp_path) as url:
        result, agents = run(url)
        first = up.chat_requests[0]
    assert result == BALANCE and agents[-1] == "banker", (result, agents)
    offered = list(offered_tools(first, "chat"))
    # routed: 31 tools in, k = 3 + the hand-off kept + toolsift's search tool; the question names no hand-off
    assert "handoff" in offered and len(offered) <= 3 + 2, offered
    assert len(first["tools"]) < 31 and "handoff" not in QUESTION.lower()
    hand = next(m for m in up.chat_requests[1]["messages"] if m.get("role") == "tool")
    assert "banker" in json.dumps(hand)  # the hand-off ran in LlamaIndex and the banker took over

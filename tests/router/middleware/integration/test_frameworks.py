"""Issue 13: the real agent frameworks against the real proxy (30 tools, k = 5) and a scripted model
speaking each real wire format. Each agent must finish its task with at most k + the kept tools
offered, the verdict headers must reach its HTTP client, and an upstream error must surface as
the framework's own exception."""
from __future__ import annotations

import asyncio
import json

import openai
import pytest

from tests.support.scripted_apis import answer, offered_tools
from tests.support.scripted_upstream import error

from .conftest import K, RESULT, TASK, run_tool, stack

RATE_LIMITED = error(429, {"error": {"message": "slow down", "type": "rate_limit_error"}}, {"retry-after": "1"})


def assert_routed(s, api: str, kept: int = 1) -> None:
    """get_weather offered first time, never more than k + ``kept`` tools, verdicts on every routed answer."""
    offered = s.offered(api)
    assert offered and "get_weather" in offered[0], offered
    assert all(len(o) <= K + kept for o in offered), [len(o) for o in offered]
    routed = s.seen.routed()
    assert routed and all("x-toolsift-selected" in h for h in routed)
    # verdicts: in the headers of a whole answer, in the last SSE comment of a stream
    assert all("x-toolsift-verdicts" in h for h in routed if "event-stream" not in h.get("content-type", ""))
    assert s.seen.verdicts() and set(s.seen.verdicts()) <= {"valid", "correct"}, s.seen.verdicts()


# ---------------------------------------------------------------- OpenAI Agents SDK

def _agents_tools(tools):
    agents = pytest.importorskip("agents")

    def make(name):
        async def invoke(ctx, args: str) -> str:
            return run_tool(name, json.loads(args or "{}"))
        return invoke

    return [agents.FunctionTool(name=t["function"]["name"], description=t["function"]["description"],
                                params_json_schema=t["function"]["parameters"], on_invoke_tool=make(t["function"]["name"]),
                                strict_json_schema=False) for t in tools]


@pytest.mark.parametrize("model_class", ["OpenAIChatCompletionsModel", "OpenAIResponsesModel"])
def test_openai_agents_finishes_with_routed_tools(tools30, model_class):
    agents = pytest.importorskip("agents")
    agents.set_tracing_disabled(True)
    api = "chat" if model_class == "OpenAIChatCompletionsModel" else "responses"
    with stack() as s:
        client = openai.AsyncOpenAI(api_key="sk-x", base_url=f"{s.url}/v1", max_retries=0,
                                    http_client=s.seen.async_client())
        model = getattr(agents, model_class)(model="m", openai_client=client)
        agent = agents.Agent(name="weather", instructions="Use the tools.", model=model, tools=_agents_tools(tools30))
        result = agents.Runner.run_sync(agent, TASK)
        assert "sunny" in result.final_output
        assert_routed(s, api)
        s.up.set_script([RATE_LIMITED])
        with pytest.raises(openai.RateLimitError):
            agents.Runner.run_sync(agent, TASK)


def test_openai_agents_without_tools_gets_none_added(gorilla_db):
    """The reported failure: a catalog's tools were added to a tool-less agent, which then failed
    with ModelBehaviorError on the model's call. By default nothing is added; opting in shows why."""
    agents = pytest.importorskip("agents")
    agents.set_tracing_disabled(True)
    from router import Router

    def first_tool(request, api):  # a model that calls any tool it is offered
        names = list(offered_tools(request, api))
        return answer(api, None, [(names[0], {})]) if names else answer(api, "no tools, so here is my answer")

    router = Router.open(gorilla_db)
    for inject in (False, True):
        with stack(first_tool, router=router, inject=inject) as s:
            client = openai.AsyncOpenAI(api_key="sk-x", base_url=f"{s.url}/v1", max_retries=0)
            agent = agents.Agent(name="plain", instructions="Answer.", tools=[],
                                 model=agents.OpenAIChatCompletionsModel(model="m", openai_client=client))
            if not inject:
                assert agents.Runner.run_sync(agent, "classify sports videos").final_output.startswith("no tools")
                assert "tools" not in s.up.chat_requests[0]
            else:
                with pytest.raises(agents.ModelBehaviorError):
                    agents.Runner.run_sync(agent, "classify sports videos")


# ---------------------------------------------------------------- LangChain

def test_langchain_bind_tools_invoke_and_stream(tools30):
    lc = pytest.importorskip("langchain_openai")
    from langchain_core.messages import HumanMessage, ToolMessage

    with stack() as s:
        chat = lc.ChatOpenAI(model="m", base_url=f"{s.url}/v1", api_key="sk-x", max_retries=0,
                             http_client=s.seen.sync_client())
        llm = chat.bind_tools(tools30)
        history = [HumanMessage(TASK)]
        reply = llm.invoke(history)
        while reply.tool_calls:  # the app's own loop: every call is to a tool the app defined
            assert {c["name"] for c in reply.tool_calls} <= {t["function"]["name"] for t in tools30}
            history += [reply, *(ToolMessage(run_tool(c["name"], c["args"]), tool_call_id=c["id"])
                                 for c in reply.tool_calls)]
            reply = llm.invoke(history)
        assert "sunny" in reply.content
        chunks = list(llm.stream([HumanMessage(TASK)]))
        full = chunks[0]
        for c in chunks[1:]:
            full += c
        assert full.tool_calls[0]["name"] == "get_weather" and full.tool_calls[0]["args"] == {"city": "Oslo"}
        assert_routed(s, "chat")
        assert "x-toolsift-route" in s.seen.headers[-1]  # the streamed answer's headers too
        s.up.set_script([RATE_LIMITED])
        with pytest.raises(openai.RateLimitError):
            llm.invoke(TASK)


# ---------------------------------------------------------------- pydantic-ai

def _pydantic_ai_agent(s, tools30, **kw):
    pai = pytest.importorskip("pydantic_ai")
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    def make(name):
        def fn(**kwargs):
            return run_tool(name, kwargs)
        return fn

    tools = [pai.Tool.from_schema(make(t["function"]["name"]), name=t["function"]["name"],
                                  description=t["function"]["description"], json_schema=t["function"]["parameters"])
             for t in tools30]
    client = openai.AsyncOpenAI(api_key="sk-x", base_url=f"{s.url}/v1", max_retries=0,
                                http_client=s.seen.async_client())
    model = OpenAIChatModel("m", provider=OpenAIProvider(openai_client=client))
    return pai.Agent(model, tools=tools, **kw)


def test_pydantic_ai_tools_and_structured_output(tools30):
    pytest.importorskip("pydantic_ai")
    from pydantic import BaseModel
    from pydantic_ai.exceptions import ModelHTTPError

    class Forecast(BaseModel):
        city: str
        celsius: float

    with stack() as s:
        result = _pydantic_ai_agent(s, tools30).run_sync(TASK)
        assert "sunny" in result.output
        assert_routed(s, "chat")
    with stack() as s:  # structured output arrives as a call to final_result: routing must keep it
        result = _pydantic_ai_agent(s, tools30, output_type=Forecast).run_sync(TASK)
        assert isinstance(result.output, Forecast)
        assert all("final_result" in o for o in s.offered("chat"))
        assert_routed(s, "chat", kept=2)  # final_result (control) and get_weather (history)
        s.up.set_script([RATE_LIMITED])
        with pytest.raises(ModelHTTPError) as exc:
            _pydantic_ai_agent(s, tools30).run_sync(TASK)
        assert exc.value.status_code == 429


# ---------------------------------------------------------------- smolagents

def _smolagents_tools(tools30):
    smol = pytest.importorskip("smolagents")
    kinds = {"string": "string", "number": "number", "integer": "integer", "boolean": "boolean"}
    out = []
    for t in tools30:
        fn = t["function"]
        props, required = fn["parameters"]["properties"], set(fn["parameters"].get("required") or [])
        inputs = {p: {"type": kinds.get(spec.get("type"), "string"), "description": p.replace("_", " "),
                      **({} if p in required else {"nullable": True})} for p, spec in props.items()}
        params = ", ".join([p for p in props if p in required] + [f"{p}=None" for p in props if p not in required])
        namespace: dict = {"run_tool": run_tool, "name": fn["name"]}
        # smolagents checks that forward's parameters are exactly the tool's inputs
        exec(f"def forward(self, {params}):\n    return run_tool(name, {{}})", namespace)  # noqa: S102
        cls = type(f"T_{fn['name']}", (smol.Tool,), {"name": fn["name"], "description": fn["description"],
                                                     "inputs": inputs, "output_type": "string",
                                                     "forward": namespace["forward"]})
        out.append(cls())
    return out


def test_smolagents_tool_calling_agent_reaches_final_answer(tools30):
    smol = pytest.importorskip("smolagents")
    with stack() as s:
        model = smol.OpenAIServerModel(model_id="m", api_base=f"{s.url}/v1", api_key="sk-x",
                                       client_kwargs={"http_client": s.seen.sync_client(), "max_retries": 0},
                                       retry=False)  # smolagents' own rate-limit retry waits 60 s
        agent = smol.ToolCallingAgent(tools=_smolagents_tools(tools30), model=model, max_steps=4, verbosity_level=0)
        out = agent.run(TASK)
        assert "sunny" in str(out)
        assert all("final_answer" in o for o in s.offered("chat"))  # the control tool was never routed out
        assert_routed(s, "chat", kept=2)
        s.up.set_script([RATE_LIMITED])
        with pytest.raises(smol.utils.AgentGenerationError) as exc:
            agent.run(TASK, reset=True)
        assert isinstance(exc.value.__cause__, openai.RateLimitError)


# ---------------------------------------------------------------- Anthropic

def _anthropic_tools(tools30):
    return [{"name": t["function"]["name"], "description": t["function"]["description"],
             "input_schema": t["function"]["parameters"]} for t in tools30]


def test_anthropic_client_finishes_with_messages_api(tools30):
    anthropic = pytest.importorskip("anthropic")
    tools = _anthropic_tools(tools30)
    with stack() as s:
        client = anthropic.Anthropic(api_key="sk-ant-x", base_url=s.url, max_retries=0, http_client=s.seen.sync_client())
        messages = [{"role": "user", "content": TASK}]
        reply = client.messages.create(model="m", max_tokens=256, tools=tools, messages=messages)
        while reply.stop_reason == "tool_use":
            uses = [b for b in reply.content if b.type == "tool_use"]
            messages += [{"role": "assistant", "content": [b.model_dump() for b in reply.content]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": b.id,
                                                       "content": run_tool(b.name, b.input)} for b in uses]}]
            reply = client.messages.create(model="m", max_tokens=256, tools=tools, messages=messages)
        assert RESULT.split(",")[0] in reply.content[0].text or "sunny" in reply.content[0].text
        with client.messages.stream(model="m", max_tokens=256, tools=tools,
                                    messages=[{"role": "user", "content": TASK}]) as stream:
            final = stream.get_final_message()
        assert final.content[0].name == "get_weather" and final.content[0].input == {"city": "Oslo"}
        assert_routed(s, "messages")
        s.up.set_script([error(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}})])
        with pytest.raises(anthropic.RateLimitError):
            client.messages.create(model="m", max_tokens=8, tools=tools, messages=[{"role": "user", "content": TASK}])


def test_anthropic_async_client(tools30):
    anthropic = pytest.importorskip("anthropic")

    async def main(s):
        client = anthropic.AsyncAnthropic(api_key="k", base_url=s.url, max_retries=0, http_client=s.seen.async_client())
        return await client.messages.create(model="m", max_tokens=64, tools=_anthropic_tools(tools30),
                                            messages=[{"role": "user", "content": TASK}])

    with stack() as s:
        reply = asyncio.run(main(s))
        assert reply.content[0].name == "get_weather"
        assert_routed(s, "messages")


# ---------------------------------------------------------------- LangChain create_agent + ToolStrategy (issue 37)

def test_langchain_create_agent_with_tool_strategy_finishes(tools30):
    """The structured-output tool is named after its schema class, which no name pattern covers,
    and the question does not match it: routing must keep it, or the agent never finishes."""
    lc = pytest.importorskip("langchain_openai")
    agents = pytest.importorskip("langchain.agents")
    from langchain.agents.structured_output import ToolStrategy
    from langchain_core.tools import StructuredTool
    from pydantic import BaseModel

    from tests.support.scripted_apis import tool_results

    class AnswerFormat(BaseModel):
        """Structured answer."""
        answer: str
        confidence: float

    def model(request: dict, api: str) -> dict:
        offered = offered_tools(request, api)
        if not tool_results(request, api):
            return answer(api, None, [("get_weather", {"city": "Oslo"})])
        if "AnswerFormat" in offered:
            return answer(api, None, [("AnswerFormat", {"answer": "sunny, 12 °C", "confidence": 0.9})])
        return answer(api, f"no output tool among {sorted(offered)}")

    def make(name):
        return lambda **kw: run_tool(name, kw)

    tools = [StructuredTool.from_function(make(t["function"]["name"]), name=t["function"]["name"],
                                          description=t["function"]["description"],
                                          args_schema=t["function"]["parameters"]) for t in tools30]
    with stack(model) as s:
        chat = lc.ChatOpenAI(model="m", base_url=f"{s.url}/v1", api_key="sk-x", max_retries=0)
        agent = agents.create_agent(chat, tools=tools, response_format=ToolStrategy(AnswerFormat))
        result = agent.invoke({"messages": [{"role": "user", "content": TASK}]}, {"recursion_limit": 8})
        assert result["structured_response"] == AnswerFormat(answer="sunny, 12 °C", confidence=0.9)
        assert all("AnswerFormat" in o for o in s.offered("chat")) and len(s.offered("chat")) == 2
        assert all(len(o) <= K + 2 for o in s.offered("chat"))  # k + the output tool (+ the called one)

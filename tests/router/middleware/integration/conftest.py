"""The integration suite's shared parts: 30 tools (the task needs get_weather), the real proxy
(k = 5, BM25) in front of the scripted agent model, and HTTP clients that record the response
headers each framework received (the frameworks themselves hide them).

The frameworks come from the ``integration`` extra (pyproject.toml), which ``make test``
installs; each test skips with the reason when its framework is absent.
"""
from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field

import pytest

from router.middleware.app import create_app
from tests.support.scripted_apis import agent_model
from tests.support.scripted_upstream import ScriptedUpstream
from tests.support.servers import ServerThread
from tests.support.toolsets import small_tools

K = 5
TASK = "What's the weather in Oslo right now?"
RESULT = "12 °C, sunny"
_EXTRA = [("stock_news", "Latest news articles about a listed company."),
          ("translate_document", "Translate a whole document file."),
          ("currency_history", "Historical exchange rates between two currencies."),
          ("restaurant_search", "Find restaurants near a place by cuisine."),
          ("recipe_lookup", "Recipes that use given ingredients."),
          ("package_tracking", "Where a parcel is, by tracking number."),
          ("movie_showtimes", "Cinema showtimes for a film in a town."),
          ("sports_scores", "Live scores of football and basketball games."),
          ("train_schedule", "Departures of trains between two stations."),
          ("parking_finder", "Free parking spaces near an address."),
          ("dictionary_define", "Definition of an English word."),
          ("unit_convert", "Convert between units of length, mass and volume."),
          ("crypto_price", "Price of a crypto currency in dollars."),
          ("podcast_search", "Find podcast episodes about a topic."),
          ("air_quality", "Air pollution index (PM2.5, ozone) at a location."),
          ("holiday_calendar", "Public holidays of a country in a year."),
          ("book_search", "Books by title, author or subject."),
          ("lottery_results", "Latest lottery draw numbers.")]


def thirty_tools() -> list[dict]:
    """Chat Completions tools: the 12 hand-written ones and 18 more (30)."""
    extra = [{"type": "function", "function": {"name": n, "description": d, "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}} for n, d in _EXTRA]
    tools = small_tools() + extra
    assert len(tools) == 30
    return tools


def run_tool(name: str, args: dict) -> str:
    return RESULT if name == "get_weather" else f"{name} ran"


@dataclass
class Seen:
    """Response headers of every answer a framework's HTTP client received."""

    headers: list[dict] = field(default_factory=list)

    def hook(self, response) -> None:
        self.headers.append({k.lower(): v for k, v in response.headers.items()})

    async def ahook(self, response) -> None:
        self.hook(response)

    def sync_client(self):
        import httpx2

        return httpx2.Client(event_hooks={"response": [self.hook]})

    def async_client(self):
        import httpx2

        return httpx2.AsyncClient(event_hooks={"response": [self.ahook]})

    def routed(self) -> list[dict]:
        """Headers of the routed answers (each with its routing and verdict headers)."""
        return [h for h in self.headers if "x-toolsift-route" in h and not h["x-toolsift-route"].startswith("unrouted")]

    def verdicts(self) -> list[str]:
        return [v["verdict"] for h in self.routed() if "x-toolsift-verdicts" in h
                for v in json.loads(h["x-toolsift-verdicts"])]


@dataclass
class Stack:
    up: ScriptedUpstream
    url: str  # the proxy's root (no /v1)
    seen: Seen

    def offered(self, api: str) -> list[list[str]]:
        from tests.support.scripted_apis import offered_tools

        return [list(offered_tools(r, api)) for r in self.up.api_requests(api)]


@contextlib.contextmanager
def stack(script=None, **proxy):
    """The scripted agent model behind the real proxy (k = 5, BM25)."""
    proxy.setdefault("k", K)
    proxy.setdefault("method", "bm25")
    with ScriptedUpstream(script or agent_model(arguments={"city": "Oslo"}, result=RESULT)) as up, \
            ServerThread(create_app(up.base_url, **proxy)) as srv:
        yield Stack(up, srv.url, Seen())


@pytest.fixture
def tools30() -> list[dict]:
    return thirty_tools()

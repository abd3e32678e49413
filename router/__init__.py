"""router: picks the few relevant tools for each request (hybrid BM25 + dense retrieval).

This package is the retrieval core; its clients each have a room of their own:
`router.middleware` (the OpenAI wrapper and the proxy), `router.gateway` (the MCP gateway),
`router.agent` (the reference tool-calling loop) and `router.cli` (the ``toolsift`` command).
Nothing heavy is imported here: the embedding model, faiss and bm25s load on first use.

    from router import Router
    router = Router.open("catalog.db")
    for s in router.select("classify sports activities in videos", k=5):
        print(s.rank, s.record.id, round(s.score, 3), s.matched_terms)
"""
from .config import RouterConfig
from .engine import Router
from .errors import RouterError
from .index import IndexReport, build_index
from .selection import Selection

__all__ = ["IndexReport", "Router", "RouterConfig", "RouterError", "Selection", "build_index"]

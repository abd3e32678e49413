"""router: picks the few relevant tools for each request (hybrid BM25 + dense retrieval).

The retrieval core is four layers, each a sub-package: `router.encoders` (text to vectors) below
`router.index` (what a catalog is searched with) below `router.ranking` (which tools a request gets:
the `Router`), with `router.training` (tune the encoder on labelled queries) and
`router.tenancy` (which tools a client may see) above the engine. Its clients each have a room of
their own: `router.middleware` (the OpenAI wrapper and the proxy), `router.gateway` (the MCP
gateway), `router.agent` (the reference tool-calling loop) and `router.cli` (the ``toolsift``
command). Nothing heavy is imported here: the embedding model, faiss and bm25s load on first use.

    from router import Router
    router = Router.open("catalog.db")
    for s in router.select("classify sports activities in videos", k=5):
        print(s.rank, s.record.id, round(s.score, 3), s.matched_terms)
"""
from .errors import RouterError
from .index import IndexReport, build_index
from .ranking import Router, RouterConfig, Selection

__all__ = ["IndexReport", "Router", "RouterConfig", "RouterError", "Selection", "build_index"]

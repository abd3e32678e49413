"""router: picks the few relevant tools for each request (hybrid BM25 + dense retrieval).

Nothing heavy is imported here: the embedding model, faiss and bm25s load on first use.

    from router import Router
    router = Router.open("catalog.db")
    for s in router.select("classify sports activities in videos", k=5):
        print(s.rank, s.record.id, round(s.score, 3), s.matched_terms)
"""
from .errors import RouterError
from .router import Router, RouterConfig, Selection

__all__ = ["Router", "RouterConfig", "RouterError", "Selection"]

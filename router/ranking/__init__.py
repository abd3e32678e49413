"""router.ranking: which tools one request gets. The `Router` (engine, with its encoder and dense
index made on first use in dense_side and its result put together in assembly) and its settings (config),
the query a conversation becomes (query), the fusion of the BM25 and dense rankings (fusion), what
happens to the fused ranking before tools are admitted (shaping: exact names, coverage of a
request's parts, abstention, adaptive k), the token budget (budget), the reasons (explain), the
result (selection), and a router that follows a changing catalog (watch).
"""
from .config import RouterConfig
from .engine import Router
from .selection import Selection, SelectionList
from .watch import LiveRouter

__all__ = ["LiveRouter", "Router", "RouterConfig", "Selection", "SelectionList"]

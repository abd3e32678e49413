"""router.index: what a catalog is searched with. The BM25 index (lexical, lexical_delta), the
dense vector index (vector_index, dense_delta), the vectors kept per passage (vector_store), the
index files next to a catalog (build) and the routing state a catalog stores for replicas (stored).

Below the ranking (router.ranking), above the encoders (router.encoders).
"""
from .build import IndexReport, build_index, load_index
from .lexical import LexicalIndex
from .scores import Ranking
from .stored import StoredIndex
from .vector_index import DenseIndex

__all__ = ["DenseIndex", "IndexReport", "LexicalIndex", "Ranking", "StoredIndex", "build_index", "load_index"]

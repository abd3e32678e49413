"""Abstention: saying "no tool fits" instead of sending the five least bad ones.

The fused scores cannot say it: they are min-max normalized per request, so the top tool always
scores about 1, however poor it is. The evidence is raw instead: the best cosine between the
request (its whole vector, and the vector of each of its parts, router.ranking.coverage) and the tools
ranked at the top. Below a threshold the selection is *flagged* as an abstention; what a way in
does with the flag is its own choice (docs/routing.md): the library and `toolsift route` report it
and keep the ranked tools unless asked to drop them, the proxy sets ``x-toolsift-abstain`` and
strips nothing unless the user opted in, the MCP gateway's ``search_tools`` answers with no tools.

A request that names a tool (router.ranking.exact_names) never abstains. BM25-only routing does not
abstain: raw BM25 scores depend on the catalog's size and wording too much for one threshold.

The threshold was chosen by `toolsift bench routing` on one half of its abstention sets (BFCL's
irrelevance questions, catalogs with the gold tools removed, and their answerable counterparts)
and is reported on the other half; the rule is in docs/routing.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..index.vector_index import cosines


@dataclass(frozen=True)
class Abstention:
    """The evidence (best raw cosine of the request or one of its parts with a top-ranked tool)
    and the threshold it was compared with."""

    evidence: float
    threshold: float

    @property
    def abstained(self) -> bool:
        return self.evidence < self.threshold

    def to_dict(self) -> dict[str, Any]:
        return {"abstained": self.abstained, "evidence": round(float(self.evidence), 4),
                "threshold": round(float(self.threshold), 4)}

    def header(self) -> str:
        """``x-toolsift-abstain`` value: ``1; evidence=0.19; threshold=0.25`` (``0; ...`` when not)."""
        return f"{int(self.abstained)}; evidence={self.evidence:.4f}; threshold={self.threshold:.4f}"


def evidence(dense: Any, vectors: np.ndarray, docs: np.ndarray) -> float:
    """The best cosine between any of ``vectors`` (the request, its parts) and ``docs``' vectors."""
    if dense is None or not len(docs):
        return 0.0
    sims = cosines(dense.vectors[np.asarray(docs, dtype=np.int64)], vectors)
    return float(sims.max())

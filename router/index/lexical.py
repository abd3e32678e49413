"""BM25 over record tokens: bm25s builds the index, numpy queries it.

bm25s ("lucene" method) stores every (term, document) BM25 score in a sparse CSC matrix, so a
query's scores are the sum of its terms' columns. We score the whole corpus per query (~1 ms at
20k docs) so filters and candidate sets are plain boolean masks applied before ranking.

Why numpy and not bm25s at query time: importing bm25s imports numba and scipy, ~0.55 s of a fresh
`toolsift route` process (python -X importtime, 20k tools), while summing a few CSC columns is a
handful of numpy operations. The index files keep bm25s' own layout (``bm25s.BM25.load`` reads
them), and the sums are the same float32 additions in the same order as bm25s' own scorer.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from ..errors import RouterError

# Lucene BM25. In an exploratory run (not part of the committed grid) k1 0.9-2.0 and b 0.5-0.9
# moved hybrid StableToolBench nDCG@5 by less than 0.005, so the textbook values stay.
BM25_PARAMS = {"k1": 1.2, "b": 0.75, "method": "lucene"}
# Methods whose scores are entirely in the matrix (BM25L / BM25+ add a per-term constant for
# documents without the term, which this reader does not apply).
_MATRIX_ONLY = ("robertson", "lucene", "atire")
_FILES = {"data": "data.csc.index.npy", "indices": "indices.csc.index.npy", "indptr": "indptr.csc.index.npy"}


class LexicalIndex:
    """A BM25 index over pre-tokenized documents (see router.text for the tokens)."""

    def __init__(self, vocab: dict[str, int], data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
                 n_docs: int, params: dict | None = None) -> None:
        self.vocab = vocab
        self.data, self.indices, self.indptr = data, indices, indptr
        self.n_docs = n_docs
        self.params = params or {}

    @classmethod
    def build(cls, docs: list[list[str]], params: dict | None = None) -> "LexicalIndex":
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)
        p = dict(BM25_PARAMS, **(params or {}))
        r = bm25s.BM25(k1=p["k1"], b=p["b"], method=p["method"])
        # An empty document would make bm25s drop it and shift every later row; pad it.
        r.index([d if d else [""] for d in docs], show_progress=False)
        s = r.scores
        saved = {"k1": r.k1, "b": r.b, "delta": r.delta, "method": r.method, "idf_method": r.idf_method,
                 "dtype": r.dtype, "int_dtype": r.int_dtype, "num_docs": len(docs),
                 "version": bm25s.__version__, "backend": r.backend}
        columns = len(s["indptr"]) - 1
        vocab = {t: i for t, i in r.vocab_dict.items() if 0 <= i < columns}  # see load()
        return cls(vocab, s["data"], s["indices"], s["indptr"], len(docs), saved)

    def token_ids(self, tokens: list[str]) -> list[int]:
        vocab = self.vocab
        return [vocab[t] for t in dict.fromkeys(tokens) if t in vocab and t]

    def scores(self, tokens: list[str]) -> np.ndarray:
        """BM25 score of every document (zeros when no query token is in the vocabulary)."""
        scores = np.zeros(self.n_docs, dtype=np.float32)
        # Repeated query words count once per occurrence, as in rank-bm25 and bm25s.
        for t in self._token_ids_all(tokens):
            lo, hi = self.indptr[t], self.indptr[t + 1]
            scores[self.indices[lo:hi]] += self.data[lo:hi]  # a column holds each document once
        return scores

    def _token_ids_all(self, tokens: list[str]) -> list[int]:
        vocab = self.vocab
        return [vocab[t] for t in tokens if t and t in vocab]

    def matched(self, doc: int, token_ids: list[int]) -> list[int]:
        """Which of the query's token ids occur in document ``doc`` (postings lookup)."""
        out = []
        for t in token_ids:
            lo, hi = self.indptr[t], self.indptr[t + 1]
            if (self.indices[lo:hi] == doc).any():
                out.append(t)
        return out

    def vocab_inverse(self) -> dict[int, str]:
        return {i: t for t, i in self.vocab.items()}

    def save(self, directory: Path) -> None:
        """Write the index in bm25s' file layout (``bm25s.BM25.load`` reads it too)."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        for key, name in _FILES.items():
            np.save(d / name, getattr(self, key), allow_pickle=False)
        (d / "vocab.index.json").write_text(json.dumps(self.vocab, ensure_ascii=False), encoding="utf-8")
        (d / "params.index.json").write_text(json.dumps(self.params, indent=4), encoding="utf-8")
        (d / "toolsift_lexical.json").write_text(json.dumps({"n_docs": self.n_docs}))

    @classmethod
    def load(cls, directory: Path) -> "LexicalIndex":
        d = Path(directory)
        try:
            meta = json.loads((d / "toolsift_lexical.json").read_text())
            params = json.loads((d / "params.index.json").read_text(encoding="utf-8"))
            if params.get("method", "lucene") not in _MATRIX_ONLY:
                raise ValueError(f"BM25 method {params.get('method')!r} is not one this reader scores")
            vocab = json.loads((d / "vocab.index.json").read_text(encoding="utf-8"))
            arrays = {key: np.load(d / name, allow_pickle=False) for key, name in _FILES.items()}
            n_docs = int(meta["n_docs"])
            columns = len(arrays["indptr"]) - 1
            # bm25s keeps the padding token "" in the vocabulary without a column: never queried
            vocab = {t: i for t, i in vocab.items() if 0 <= i < columns}
        except Exception as exc:  # any unreadable file: the caller decides on a fallback
            raise RouterError(f"{directory}: BM25 index unreadable ({type(exc).__name__}: {exc})") from exc
        return cls(vocab, arrays["data"], arrays["indices"], arrays["indptr"], n_docs, params)

"""The ONNX Runtime encoder: a sentence-transformers folder's transformer, exported once
(router.encoders.onnx_export), run with onnxruntime, tokenized with the ``tokenizers`` library and
mean-pooled in numpy. Nothing here imports torch, transformers or sentence-transformers: a
process that routes with an exported model loads onnxruntime + tokenizers + numpy only.

Why: one MiniLM query took ~16.7 ms through torch (most of a 23 ms hybrid route at 20k tools)
and a fresh ``toolsift route`` process spent ~7 s importing torch and sentence-transformers.

Supported folders are the plain ones: Transformer → mean Pooling → (Normalize). Anything else
(another pooling, a Dense layer) is refused with the reason, and router.encoders.dense falls back to torch.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Sequence

import numpy as np


class UnsupportedModel(Exception):
    """The folder's sentence-transformers pipeline is not one this encoder reproduces."""


def folder_config(model_dir: str | os.PathLike[str]) -> dict:
    """What the encoder must reproduce of a folder: max_seq_length, lower-casing, normalization.
    Raises UnsupportedModel (with the reason) for pipelines other than Transformer → mean → Normalize."""
    root = Path(model_dir)
    if not (root / "tokenizer.json").is_file():
        raise UnsupportedModel(f"{root} has no tokenizer.json (a fast tokenizer is needed)")
    try:
        modules = json.loads((root / "modules.json").read_text(encoding="utf-8"))
        st = json.loads((root / "sentence_bert_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UnsupportedModel(f"{root}: not a sentence-transformers folder ({exc})") from None
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]) or modules[0].get("path"):
        raise UnsupportedModel(f"{root}: modules {kinds} (only Transformer → Pooling → Normalize is exported)")
    pooling_dir = root / modules[1].get("path", "1_Pooling")
    pooling = json.loads((pooling_dir / "config.json").read_text(encoding="utf-8"))
    # sentence-transformers 6 writes {"pooling_mode": "mean"}; older folders (the bundled one) the
    # legacy booleans {"pooling_mode_mean_tokens": true, ...}
    mode = pooling.get("pooling_mode")
    modes = ([mode] if isinstance(mode, str) else list(mode)) if mode is not None else \
        [k.removeprefix("pooling_mode_") for k, v in pooling.items() if k.startswith("pooling_mode_") and v]
    if modes not in (["mean"], ["mean_tokens"]):
        raise UnsupportedModel(f"{root}: pooling {modes} (only mean pooling is exported)")
    dim = pooling.get("embedding_dimension") or pooling.get("word_embedding_dimension") or 0
    return {"max_seq_length": _max_seq_length(root, st), "lower": bool(st.get("do_lower_case")), "dim": int(dim)}


def _max_seq_length(root: Path, st: dict) -> int:
    """Where the folder keeps its truncation length: sentence_bert_config.json in older folders
    (the bundled one), only the tokenizer's ``model_max_length`` in folders sentence-transformers 6
    writes (`toolsift tune`'s). Falling back to 512 there made the ONNX encoder read passages
    twice as far as torch: its export check failed on long StableToolBench passages (cosine 0.986)."""
    if st.get("max_seq_length"):
        return int(st["max_seq_length"])
    try:
        tok = json.loads((root / "tokenizer_config.json").read_text(encoding="utf-8"))
        if 0 < int(tok.get("model_max_length") or 0) <= 100_000:  # "no limit" is written as 1e30
            return int(tok["model_max_length"])
    except (OSError, ValueError, TypeError):
        pass
    return 512


def _session(path: Path, threads: int, spin: bool = False):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    # Threads that spin while waiting starve when other processes hold the 2 cores (the same
    # reason router.encoders.dense sets OMP_WAIT_POLICY=PASSIVE for torch and faiss). The wide
    # query session (OnnxEncoder.encode_query) spins inside a run, where its two threads meet
    # between every operator, and stops when the run ends: only used when a core is idle.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    if spin:
        opts.add_session_config_entry("session.force_spinning_stop", "1")
    opts.log_severity_level = 3
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def idle_cores(cores: int) -> bool:
    """Whether a core is free for a second encoder thread: the 1-minute load average below
    ``cores - 0.5`` (our own busy thread counts one). A minute-old signal, but a wrong guess only
    costs one request's wall time (a second thread that waits for a busy core), not its result."""
    try:
        return cores > 1 and os.getloadavg()[0] < cores - 0.5
    except OSError:  # no load average on this platform
        return False


class TextTokenizer:
    """texts -> ``tokenizers`` encodings as the folder's sentence-transformers pipeline makes
    them (lower-cased if it lower-cases, truncated at max_seq_length, unpadded)."""

    def __init__(self, model_dir: str | os.PathLike[str]) -> None:
        from tokenizers import Tokenizer

        cfg = folder_config(model_dir)
        self.lower = cfg["lower"]
        self.tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(cfg["max_seq_length"])

    def __call__(self, texts: Sequence[str]) -> list:
        texts = [t.lower() for t in texts] if self.lower else list(texts)
        return self.tokenizer.encode_batch(texts) if len(texts) > 1 else [self.tokenizer.encode(texts[0])]


def feed(encodings: list, input_names: Sequence[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The session inputs of a batch of encodings, padded to the longest, and its attention mask."""
    seq = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), seq), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, e in enumerate(encodings):
        ids[row, :len(e.ids)] = e.ids
        mask[row, :len(e.ids)] = 1
    inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    return {n: inputs[n] for n in input_names}, mask


class OnnxEncoder:
    """Normalized sentence vectors from an exported ONNX file, as sentence-transformers computes
    them (mean of the token embeddings under the attention mask, then L2 normalization).

    A single-threaded session: a batch of texts runs one text per core in parallel, and a short
    query is too small to split across threads. A long query (``WIDE_QUERY_TOKENS`` word pieces
    or more: an agent's request of several sentences) runs on a second, two-threaded session
    when a core is idle (``idle_cores``): the encoder is most of such a route, and two threads
    that spin between operators cut its wall time (agent-length routes at 20k tools, p50 8.95 →
    7.33 ms wall for 8.95 → 10.86 ms CPU: `toolsift bench router --speed-only`, docs/encoder.md).
    On busy cores the single thread is cheaper and no slower, so the wide session is skipped
    there; ``wide_queries=False`` (or the environment's ``TOOLSIFT_QUERY_THREADS=1``) turns it off.
    """

    WIDE_QUERY_TOKENS = 32

    def __init__(self, model_dir: str | os.PathLike[str], onnx_path: str | os.PathLike[str],
                 threads: int | None = None, wide_queries: bool | None = None) -> None:
        cfg = folder_config(model_dir)
        self.model_dir, self.path = str(model_dir), Path(onnx_path)
        self.max_seq_length = cfg["max_seq_length"]
        self._tokens = TextTokenizer(model_dir)
        self.tokenizer = self._tokens.tokenizer
        self._query = _session(self.path, 1)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        self._threads = threads or cores  # texts encoded at once by encode()
        if wide_queries is None:  # a service on cores it shares may want one thread per query always
            wide_queries = os.environ.get("TOOLSIFT_QUERY_THREADS", "").strip() != "1"
        self._cores, self.wide_queries = cores, wide_queries
        self._wide = None  # the two-threaded query session, made on the first long query
        self._inputs = [i.name for i in self._query.get_inputs()]
        width = self._query.get_outputs()[0].shape[-1]
        self.dim = width if isinstance(width, int) else cfg["dim"]

    def get_embedding_dimension(self) -> int:  # the name sentence-transformers uses
        return self.dim

    def _run(self, session, encodings: list) -> tuple[np.ndarray, np.ndarray]:
        """Token embeddings (n, seq, dim) and the attention mask (n, seq) of a padded batch."""
        inputs, mask = feed(encodings, self._inputs)
        return session.run(None, inputs)[0], mask

    @staticmethod
    def _pool(tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
        m = mask[..., None].astype(np.float32)
        vecs = (tokens * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        return (vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)).astype(np.float32)

    def encode(self, texts: Sequence[str], *, batch_size: int = 32,
               on_batch: Callable[[int], None] | None = None) -> np.ndarray:
        """Normalized float32 vectors, one row per text; ``on_batch(n)`` after every
        ``batch_size`` texts.

        Each text runs alone on a single-threaded session, one text per core at a time. Not
        padded batches: int8 activations are quantized with one range per run, so in a batch a
        text's vector depended on its batch-mates and padding (cosine down to 0.9906 against the
        same text alone); alone, a document's vector is exactly its query vector. It also pads
        nothing, and was as fast as sorted batches of 32 (780 passages, paired, load ~11).
        """
        from concurrent.futures import ThreadPoolExecutor

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not len(texts):
            return out
        encodings = self._tokens(texts)
        one = lambda e: self._pool(*self._run(self._query, [e]))[0]  # noqa: E731
        with ThreadPoolExecutor(max_workers=max(1, min(self._threads, len(texts)))) as pool:
            done = 0
            for i, vec in enumerate(pool.map(one, encodings)):  # onnxruntime releases the GIL
                out[i] = vec
                if on_batch and (i + 1 - done == batch_size or i + 1 == len(texts)):
                    on_batch(i + 1 - done)
                    done = i + 1
        return out

    def _query_session(self, n_tokens: int):
        """The session for one query of ``n_tokens`` word pieces (see the class docstring)."""
        if not (self.wide_queries and n_tokens >= self.WIDE_QUERY_TOKENS and idle_cores(self._cores)):
            return self._query
        if self._wide is None:
            self._wide = _session(self.path, 2, spin=True)
        return self._wide

    def encode_query(self, text: str) -> np.ndarray:
        """One text, alone in its run: a (dim,) vector (the same as ``encode([text])[0]``)."""
        encodings = self._tokens([text])
        tokens, mask = self._run(self._query_session(len(encodings[0].ids)), encodings)
        return self._pool(tokens, mask)[0]

    def encode_with_spans(self, text: str, spans: Sequence[tuple[int, int]]) -> np.ndarray:
        """Row 0: the text's vector; row i: the mean of the tokens inside span i (see
        router.encoders.dense.encode_with_spans, whose torch version this reproduces)."""
        enc = self._tokens([text])[0]
        tokens, _ = self._run(self._query_session(len(enc.ids)), [enc])
        tokens = tokens[0]
        offsets = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)[:len(tokens)]
        return span_vectors(tokens.mean(axis=0), tokens, offsets, spans)


def span_vectors(whole: np.ndarray, tokens: np.ndarray, offsets: np.ndarray,
                 spans: Sequence[tuple[int, int]]) -> np.ndarray:
    """Rows: the whole text's vector, then the mean of the token vectors inside each character
    span (a span holding no token adds no row), all L2-normalized. Shared by the ONNX and the
    torch encoder, so both pool sentence spans the same way."""
    rows = [whole]
    real = offsets[:, 1] > offsets[:, 0]  # special tokens ([CLS], [SEP]) have empty offsets
    for s, e in spans:
        inside = real & (offsets[:, 0] >= s) & (offsets[:, 1] <= e)
        if inside.any():
            rows.append(tokens[inside].mean(axis=0))
    vecs = np.vstack(rows).astype(np.float32)
    return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)

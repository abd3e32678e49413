"""router.encoders: text to vectors. The embedding model folder and the shipped general encoder
(model, general_encoder), the ONNX Runtime encoder and its one-time export (onnx_encoder,
onnx_export), and the lazy `Embedder` with its content-hash embedding cache (dense).

Nothing here knows an index or a ranking: the index (router.index) stores what these make.
"""
from .dense import ENCODERS, EmbeddingCache, Embedder, resolve_encoder
from .model import BASE_MODEL, DEFAULT_MODEL, model_path

__all__ = ["BASE_MODEL", "DEFAULT_MODEL", "ENCODERS", "EmbeddingCache", "Embedder", "model_path", "resolve_encoder"]

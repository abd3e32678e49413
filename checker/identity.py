"""Which arguments identify an API: function path + identifying argument values.

Positional and keyword forms of one argument bind to the same name (via a small
signature table for the hub loaders); arguments that do not identify the model
(``pretrained=True``, ``input_shape=...``, ``savedir=...``) are ignored, so extra
unrelated arguments never change identity. Values are compared exactly.
"""
from __future__ import annotations

from .parse import Call

# Positional parameter names of the functions code-style catalogs are built on.
SIGNATURES: dict[str, tuple[str, ...]] = {
    "torch.hub.load": ("repo_or_dir", "model"),
    "hub.load": ("handle",),
    "hub.KerasLayer": ("handle",),
    "hub.Module": ("spec",),
    "pipeline": ("task", "model"),
    "SentenceTransformer": ("model_name_or_path",),
    "hf_hub_download": ("repo_id", "filename"),
    "cached_download": ("url",),
    "joblib.load": ("filename",),
}
# Method names whose first positional argument is the model id, whatever the class.
SUFFIX_SIGNATURES: dict[str, tuple[str, ...]] = {
    "from_pretrained": ("pretrained_model_name_or_path",),
    "from_hparams": ("source",),
}
# Keyword names that identify which model/API is meant (positional literals of
# unknown functions identify too, as "#0", "#1", ...).
IDENTIFYING = frozenset({
    "repo_or_dir", "model", "handle", "spec", "task", "pretrained_model_name_or_path",
    "model_name_or_path", "repo_id", "filename", "url", "source", "model_name", "model_id",
})
# Module prefixes users spell differently for the same function.
_PREFIXES = (("tensorflow_hub.", "hub."), ("tensorflow.", "tf."), ("transformers.", ""),
             ("sentence_transformers.", ""), ("huggingface_hub.", ""), ("diffusers.", ""))

Identity = tuple[tuple[str, str], ...]
Key = tuple[str, Identity]


def normalize_path(path: str) -> str:
    for old, new in _PREFIXES:
        if path.startswith(old) and path != old.rstrip("."):
            return new + path[len(old):]
    return path


def _signature(path: str) -> tuple[str, ...]:
    sig = SIGNATURES.get(path)
    if sig is None:
        sig = SUFFIX_SIGNATURES.get(path.rsplit(".", 1)[-1], ())
    return sig


def bind(call: Call) -> dict[str, tuple]:
    """Argument name -> value, positional arguments named by the signature (or ``#i``)."""
    path = normalize_path(call.path)
    sig = _signature(path)
    out: dict[str, tuple] = {}
    pos = 0
    for kw, value in call.args:
        if kw is None:
            out[sig[pos] if pos < len(sig) else f"#{pos}"] = value
            pos += 1
        elif kw not in ("*", "**"):
            out[kw] = value
    return out


def identity(call: Call) -> Identity:
    """The identifying (name, literal value) pairs of a call, sorted; () if none."""
    items = []
    for name, (kind, value) in bind(call).items():
        if kind == "str" and (name in IDENTIFYING or name.startswith("#")):
            items.append((name, value.strip()))
    return tuple(sorted(items))


def key(call: Call) -> Key:
    return (normalize_path(call.path), identity(call))


def describe(k: Key) -> str:
    path, ident = k
    inner = ", ".join(f"{n}={v!r}" if not n.startswith("#") else repr(v) for n, v in ident)
    return f"{path}({inner})"

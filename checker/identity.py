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
    "joblib.load": ("file",),
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
    "model_name_or_path", "repo_id", "file", "url", "source", "model_name", "model_id",
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
    """Argument name -> value; positional arguments take the signature's free names (or ``#i``)."""
    path = normalize_path(call.path)
    out: dict[str, tuple] = {kw: v for kw, v in call.args if kw is not None and kw not in ("*", "**")}
    free = [name for name in _signature(path) if name not in out]
    pos = 0
    for kw, value in call.args:
        if kw is None:
            out[free.pop(0) if free else f"#{pos}"] = value
            pos += 1
    return out


def identity(call: Call, env: dict[str, str] | None = None) -> Identity:
    """The identifying (name, literal value) pairs of a call, sorted; () if none.

    ``env`` maps variable names to the string literals assigned to them in the same
    answer, so ``from_pretrained(model_id)`` after ``model_id = 'x'`` identifies 'x'.
    """
    items = []
    shell = call.path.startswith("$ ")  # a command line: every option value identifies
    for name, (kind, value) in bind(call).items():
        if kind == "name" and env and value in env:
            kind, value = "str", env[value]
        if kind == "str" and (shell or name in IDENTIFYING or name.startswith("#")):
            items.append((name, value.strip()))
    return tuple(sorted(items))


def key(call: Call, env: dict[str, str] | None = None) -> Key:
    return (normalize_path(call.path), identity(call, env))


def describe(k: Key) -> str:
    path, ident = k
    inner = ", ".join(f"{n}={v!r}" if not n.startswith("#") else repr(v) for n, v in ident)
    return f"{path}({inner})"

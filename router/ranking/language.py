"""The language a request is written in: routing is built and measured for English requests.

The BM25 side matches English words and stems and the encoder was trained on English tool
texts, so a German request ("Wird es morgen in Oslo regnen?") put translate_text first on the
word "es". Rather than route such a request silently, the ways in say so. The language is told
by py3langid (a naive Bayes model over byte n-grams, shipped in its wheel), restricted to the
languages listed below; `toolsift bench language` measures how often it flags the English
queries of every benchmark set (the cost of a false alarm) and which of BFCL live's requests it
flags. Loading its model costs ~0.9 s, so a request that is plain ASCII and holds a word only
English uses is taken as English without it (the bench reports how many need the model).

Quoted passages ("Translate: “Le système …”") and an APIBench ``###Input:`` are content, not the
request's language, and are left out before the language is told.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["RequestLanguage", "request_language", "THRESHOLD"]

# The languages told apart (ISO 639-1). Restricting the model to widely used languages keeps
# short English requests from reading as a rare neighbour (unrestricted, "set an alarm for 11 PM"
# read as Nigerian Pidgin).
LANGUAGES = ("en", "de", "es", "fr", "it", "pt", "nl", "sv", "da", "no", "fi", "pl", "cs", "hu", "ro",
             "tr", "el", "ru", "uk", "ar", "he", "fa", "hi", "zh", "ja", "ko", "vi", "id", "th")
NAMES = {"de": "German", "es": "Spanish", "fr": "French", "it": "Italian", "pt": "Portuguese", "nl": "Dutch",
         "sv": "Swedish", "da": "Danish", "no": "Norwegian", "fi": "Finnish", "pl": "Polish", "cs": "Czech",
         "hu": "Hungarian", "ro": "Romanian", "tr": "Turkish", "el": "Greek", "ru": "Russian", "uk": "Ukrainian",
         "ar": "Arabic", "he": "Hebrew", "fa": "Persian", "hi": "Hindi", "zh": "Chinese", "ja": "Japanese",
         "ko": "Korean", "vi": "Vietnamese", "id": "Indonesian", "th": "Thai"}

# Below this probability a request is not flagged. `toolsift bench language`: no English query of
# the benchmark sets (8,433) is flagged at 0.5 or above, so the lowest measured threshold is used.
THRESHOLD = 0.5

# Words English uses and the other listed languages do not (so "in", "a", "me", "to", "was",
# "an", "die" are not here): one of them in a plain-ASCII request means English, no model loaded.
_ENGLISH = frozenset("""the of and for what which how who whom whose when where why are is were been
will would should could can cannot please with from this that these those my your our their
you we they he she it its get find show give list tell need want like about into than
then there here any some all each every would just also""".split())

_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|«[^»]*»|„[^“”]*[“”]|###\s*Input:.*", re.S)
_WORD = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class RequestLanguage:
    """A request that reads as another language than English: ``code`` (ISO 639-1), ``name``
    and ``probability`` (the model's, among `LANGUAGES`)."""

    code: str
    name: str
    probability: float

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "name": self.name, "probability": round(self.probability, 3)}


_lock = threading.Lock()
_model: Any = None


def _identifier() -> Any:
    global _model
    with _lock:
        if _model is None:
            from py3langid.langid import LanguageIdentifier, MODEL_FILE

            model = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            model.set_languages(list(LANGUAGES))
            _model = model
    return _model


def request_text(text: str) -> str:
    """The request without its quoted passages (content to act on, often in another language)."""
    return _QUOTED.sub(" ", text)


def needs_model(text: str) -> bool:
    """False when the request is plainly English: ASCII, with a word only English uses."""
    body = request_text(text)
    words = _WORD.findall(body.lower())
    return bool(words) and not (body.isascii() and any(w in _ENGLISH for w in words))


def request_language(text: str, threshold: float = THRESHOLD) -> RequestLanguage | None:
    """The request's language when it reads as another language than English with at least
    ``threshold`` probability; None for English, and when unsure."""
    if not isinstance(text, str) or not needs_model(text):
        return None
    code, p = _identifier().classify(request_text(text))
    if code == "en" or p < threshold:
        return None
    return RequestLanguage(code, NAMES.get(code, code), float(p))

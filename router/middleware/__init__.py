"""router.middleware: toolsift in front of a model, for OpenAI- and Anthropic-style clients.

- `wrap` turns an ``openai.OpenAI`` / ``AsyncOpenAI`` client into one that routes the tools of
  each request and checks the tool calls that come back (``resp.toolsift`` says what it did);
- `create_app` is the same as an HTTP proxy (``toolsift serve openai`` / ``serve anthropic``) for
  Chat Completions, the Responses API and Claude's Messages API;
- `RequestRouter` and `Exchange` are the transport-free pieces both are built from: choose the
  tools of one request, then check the answer and, if asked, repair it;
- `CONTROL_TOOLS`: the frameworks' loop tools that routing always keeps.

Everything else in this package is internal.
"""
from .annotation import Annotation
from .checks import CallCheck, Exchange
from .errors import HallucinatedCallError, MiddlewareError, RequestError, WireError
from .openai_client import wrap
from .policy import CONTROL_TOOLS
from .app import create_app
from .request import RequestRouter
from .routed import RoutedRequest

__all__ = ["Annotation", "CONTROL_TOOLS", "CallCheck", "Exchange", "HallucinatedCallError", "MiddlewareError",
           "RequestError", "RequestRouter", "RoutedRequest", "WireError", "create_app", "wrap"]

"""A real, small OpenAI-compatible HTTP server for tests: answers from a script.

No hosted model is reachable from the tests, so the wrapper, the proxy and the agent
loop talk to this server instead. It is a genuine HTTP/1.1 server (stdlib
``ThreadingHTTPServer``) on 127.0.0.1 with an ephemeral port, served from a background
thread; clients (the real ``openai`` client, httpx, the proxy) reach it over TCP.

API
---
``ScriptedUpstream(script=None, *, chunk_delay=0.0, repeat_last=False, models=("scripted-model",), record=True)``
    Context manager (``with ScriptedUpstream([...]) as up:``) or ``start()`` / ``stop()``.

    ``up.url``        ``http://127.0.0.1:<port>``
    ``up.base_url``   ``up.url + "/v1"`` — what an OpenAI client's ``base_url`` should be.
    ``up.requests``   every request received, in order: ``Received(method, path, headers, body, json)``
                      (``headers`` keys lower-cased; ``json`` is None when the body was not JSON).
                      ``record=False`` keeps nothing (load tests with megabyte bodies); ``up.count``
                      still counts the requests.
    ``up.chat_requests``  the JSON bodies of the ``POST /v1/chat/completions`` requests only.
    ``up.push(*items)`` / ``up.set_script(items)`` / ``up.clear()``  change the script / forget requests.

``POST /v1/chat/completions``, ``/v1/responses`` and ``/v1/messages`` (Anthropic) are answered
from the script; the Responses and Messages wire formats (answers and their SSE event streams)
are built by tests/support/scripted_apis.py. Every answer carries an ``x-request-id`` header.

The script is a list consumed one item per request, or one callable used for every request
(``fn(request_json)`` or ``fn(request_json, api)`` with api "chat" | "responses" | "messages"). When a list runs out the server answers 500 ``script exhausted`` (or repeats the
last item with ``repeat_last=True``). An item is one of:

- a ``dict``: the JSON answer, usually built with ``completion(...)``; when the request had
  ``"stream": true`` it is converted to Chat Completions SSE chunks (role chunk, content pieces,
  tool-call deltas — id/name first, then argument fragments —, a final ``finish_reason`` chunk,
  ``data: [DONE]``), each chunk flushed separately, ``chunk_delay`` seconds apart;
- ``error(status, body=None, headers=None)``: that HTTP status with an OpenAI-style error body
  (or ``body``) and extra response headers;
- a Responses ``response`` object / a Messages ``message`` object (scripted_apis.py): as JSON,
  or as that API's SSE events when the request streams;
- ``slow(seconds, then)``: wait, then answer ``then`` (for client/proxy timeouts);
- ``garbage(body=b"...", status=200)``: a body that is not valid JSON;
- ``raw_stream(lines)``: exactly these SSE ``data:`` payloads (str or dict), then ``[DONE]``;
- a callable ``fn(request_json) -> item`` (any of the above) — lets a test answer from the request,
  e.g. call the first tool it was offered.

Helpers: ``completion(content=None, tool_calls=None, model=..., finish_reason=None)`` builds a
``chat.completion`` object; ``tool_call(name, arguments, id=None)`` builds one ``tool_calls`` entry;
``offered_names(request_json)`` lists the tool names a request offered; ``call_first_tool`` is a
ready-made callable script (a schema-valid call to the first offered tool, arguments from
``example_arguments(parameters)``).
``GET /v1/models`` lists ``models``; ``GET /_scripted/count`` gives ``{"count": requests so far}``;
any other path answers 404 with an OpenAI-style error.

``python -m tests.support.scripted_upstream [--port N]`` serves ``call_first_tool`` in its own
process (load benchmarks: the load generator and the upstream then do not share one GIL); it
prints its base URL on the first line of stdout and serves until terminated.
"""
from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

_ids = itertools.count(1)
# The POST endpoints the server answers, by path: Chat Completions, Responses, Messages (Anthropic).
API_PATHS = {"/v1/chat/completions": "chat", "/v1/responses": "responses", "/v1/messages": "messages"}


# ---------------------------------------------------------------- script items

@dataclass(frozen=True)
class Error:
    status: int
    body: Any = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Slow:
    seconds: float
    then: Any


@dataclass(frozen=True)
class Garbage:
    body: bytes = b"<html>502 Bad Gateway from a confused load balancer"
    status: int = 200
    content_type: str = "application/json"


@dataclass(frozen=True)
class RawStream:
    lines: list[Any]


def error(status: int, body: Any = None, headers: dict[str, str] | None = None) -> Error:
    """That HTTP status with ``body`` (default: an OpenAI-style error) and extra response headers
    (e.g. ``{"retry-after": "7"}`` on a 429)."""
    return Error(status, body, tuple((headers or {}).items()))


def slow(seconds: float, then: Any) -> Slow:
    return Slow(seconds, then)


def garbage(body: bytes = Garbage.body, status: int = 200) -> Garbage:
    return Garbage(body, status)


def raw_stream(lines: list[Any]) -> RawStream:
    return RawStream(list(lines))


def tool_call(name: str, arguments: dict | str, id: str | None = None) -> dict:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": id or f"call_{next(_ids)}", "type": "function",
            "function": {"name": name, "arguments": args}}


def completion(content: str | None = None, tool_calls: list[dict] | None = None, *,
               model: str = "scripted-model", finish_reason: str | None = None) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {"id": f"chatcmpl-{next(_ids)}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message, "logprobs": None,
                                         "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop")}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def offered_names(request_json: dict) -> list[str]:
    return [t.get("function", {}).get("name") for t in request_json.get("tools") or []]


_EXAMPLES = {"string": "x", "integer": 1, "number": 1.5, "boolean": True, "array": [], "object": {}}


def example_arguments(parameters: dict | None) -> dict:
    """Arguments that satisfy a JSON Schema's required properties (first enum value, else by type)."""
    props = (parameters or {}).get("properties") or {}
    out = {}
    for name in (parameters or {}).get("required") or []:
        spec = props.get(name) or {}
        kind = spec.get("type", "string")
        kind = kind[0] if isinstance(kind, list) and kind else kind
        out[name] = spec["enum"][0] if spec.get("enum") else _EXAMPLES.get(kind, "x")
    return out


def call_first_tool(request_json: dict) -> dict:
    """Script callable: a valid call to the first tool offered (plain text if none was)."""
    tools = request_json.get("tools") or []
    if not tools:
        return completion("no tools were offered")
    fn = tools[0].get("function", {})
    return completion(tool_calls=[tool_call(fn.get("name"), example_arguments(fn.get("parameters")))])


def completion_to_chunks(comp: dict, pieces: int = 3) -> list[dict]:
    """Split a chat.completion into the chunk sequence a streaming upstream sends."""
    base = {"id": comp.get("id", "chatcmpl-x"), "object": "chat.completion.chunk",
            "created": comp.get("created", 0), "model": comp.get("model", "scripted-model")}
    chunks: list[dict] = []

    def chunk(index: int, delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    for choice in comp.get("choices", []):
        i, msg = choice.get("index", 0), choice.get("message", {})
        chunks.append(chunk(i, {"role": "assistant", "content": ""}))
        for part in _split(msg.get("content") or "", pieces):
            chunks.append(chunk(i, {"content": part}))
        for n, call in enumerate(msg.get("tool_calls") or []):
            fn = call.get("function", {})
            chunks.append(chunk(i, {"tool_calls": [{"index": n, "id": call.get("id"), "type": "function",
                                                    "function": {"name": fn.get("name"), "arguments": ""}}]}))
            for part in _split(fn.get("arguments") or "", pieces):
                chunks.append(chunk(i, {"tool_calls": [{"index": n, "function": {"arguments": part}}]}))
        chunks.append(chunk(i, {}, choice.get("finish_reason") or "stop"))
    return chunks


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // pieces))
    return [text[i:i + size] for i in range(0, len(text), size)]


# ---------------------------------------------------------------- the server

@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any = None


@dataclass
class _State:
    script: list[Any] | Callable[[dict], Any] | None
    repeat_last: bool
    chunk_delay: float
    models: tuple[str, ...]
    record: bool = True
    count: int = 0
    requests: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)
    position: int = 0

    def next_item(self, request_json: dict, api: str = "chat") -> Any:
        with self.lock:
            script = self.script
            if script is None:
                return completion("ok")
            if callable(script):
                item = script
            elif self.position < len(script):
                item = script[self.position]
                self.position += 1
            elif self.repeat_last and script:
                item = script[-1]
            else:
                return Error(500, {"error": {"message": "scripted upstream: script exhausted",
                                             "type": "server_error"}})
        if not callable(item):
            return item
        import inspect

        takes_api = len(inspect.signature(item).parameters) >= 2
        return item(request_json, api) if takes_api else item(request_json)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in separate writes; with Nagle on, a keep-alive client's delayed ACK
    # held every answer ~40 ms (a hosted API does not: it would show in every timed route)
    disable_nagle_algorithm = True
    server: "_Server"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _record(self) -> Received:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        rec = Received(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body, parsed)
        with self.server.state.lock:
            self.server.state.count += 1
            if self.server.state.record:
                self.server.state.requests.append(rec)
        return rec

    def do_GET(self) -> None:
        self._record()
        if self.path == "/_scripted/count":  # for load tests that run the upstream in its own process
            self._json(200, {"count": self.server.state.count})
        elif self.path.rstrip("/") == "/v1/models":
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "scripted"}
                    for m in self.server.state.models]
            self._json(200, {"object": "list", "data": data})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        rec = self._record()
        api = API_PATHS.get(self.path.split("?", 1)[0].rstrip("/"))
        if api is None:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
            return
        if not isinstance(rec.json, dict):
            self._json(400, {"error": {"message": "body is not a JSON object", "type": "invalid_request_error"}})
            return
        self._answer(self.server.state.next_item(rec.json, api), bool(rec.json.get("stream")))

    def _answer(self, item: Any, stream: bool) -> None:
        state = self.server.state
        if isinstance(item, Slow):
            if state.stopping.wait(item.seconds):
                return
            self._answer(item.then, stream)
        elif isinstance(item, Error):
            body = item.body if item.body is not None else {
                "error": {"message": f"scripted upstream error {item.status}", "type": "server_error"}}
            self._json(item.status, body, dict(item.headers))
        elif isinstance(item, Garbage):
            self._send(item.status, item.body, item.content_type)
        elif isinstance(item, RawStream):
            self._sse(item.lines)
        elif stream and isinstance(item, dict) and "choices" in item:
            self._sse(completion_to_chunks(item))
        elif stream and isinstance(item, dict) and item.get("object") == "response":
            from .scripted_apis import response_to_events

            self._events(response_to_events(item))
        elif stream and isinstance(item, dict) and item.get("type") == "message":
            from .scripted_apis import message_to_events

            self._events(message_to_events(item))
        else:
            self._json(200, item)

    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json", headers)

    def _request_id(self) -> None:
        """Every answer carries an ``x-request-id``, as hosted APIs' answers do (header fidelity tests)."""
        self.send_header("x-request-id", f"req_scripted_{next(_ids)}")

    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self._request_id()
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _sse(self, lines: list[Any]) -> None:
        """Chunked transfer: every SSE event is written and flushed on its own."""
        self._events([(None, line) for line in [*lines, "[DONE]"]])

    def _events(self, events: list[tuple[str | None, Any]]) -> None:
        """Chunked transfer: every SSE event (``event:`` line when named, ``data:`` line) is
        written and flushed on its own."""
        self.send_response(200)
        self._request_id()
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        delay = self.server.state.chunk_delay
        for name, data in events:
            payload = data if isinstance(data, str) else json.dumps(data)
            self._chunk((f"event: {name}\n" if name else "").encode() + f"data: {payload}\n\n".encode())
            if delay and self.server.state.stopping.wait(delay):
                return
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    state: _State

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out and hung up is expected in tests, not an error worth a traceback.
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class ScriptedUpstream:
    """See the module docstring."""

    def __init__(self, script: list[Any] | Callable[[dict], Any] | None = None, *, chunk_delay: float = 0.0,
                 repeat_last: bool = False, models: tuple[str, ...] = ("scripted-model",), record: bool = True) -> None:
        self._state = _State(list(script) if isinstance(script, (list, tuple)) else script,
                             repeat_last, chunk_delay, tuple(models), record)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self, port: int = 0) -> "ScriptedUpstream":
        server = _Server(("127.0.0.1", port), _Handler)
        server.state = self._state
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="scripted-upstream", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._state.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "ScriptedUpstream":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def requests(self) -> list[Received]:
        with self._state.lock:
            return list(self._state.requests)

    @property
    def count(self) -> int:
        return self._state.count

    def api_requests(self, api: str) -> list[dict]:
        """The JSON bodies of the POSTs to one API ("chat", "responses", "messages")."""
        return [r.json for r in self.requests if r.method == "POST" and isinstance(r.json, dict)
                and API_PATHS.get(r.path.split("?", 1)[0].rstrip("/")) == api]

    @property
    def chat_requests(self) -> list[dict]:
        return [r.json for r in self.requests if r.method == "POST" and r.path.rstrip("/").endswith("/chat/completions")
                and isinstance(r.json, dict)]

    def set_script(self, script: list[Any] | Callable[[dict], Any] | None) -> None:
        with self._state.lock:
            self._state.script = list(script) if isinstance(script, (list, tuple)) else script
            self._state.position = 0

    def push(self, *items: Any) -> None:
        with self._state.lock:
            if not isinstance(self._state.script, list):
                self._state.script, self._state.position = [], 0
            self._state.script.extend(items)

    def clear(self) -> None:
        with self._state.lock:
            self._state.requests.clear()


def _main() -> None:
    import argparse
    import signal

    parser = argparse.ArgumentParser(description="a scripted OpenAI-compatible upstream that calls the first tool")
    parser.add_argument("--port", type=int, default=0)
    up = ScriptedUpstream(call_first_tool, record=False).start(parser.parse_args().port)
    print(up.base_url, flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})  # blocked in this thread, so delivered here
    up.stop()


if __name__ == "__main__":
    import signal as _signal

    _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGTERM, _signal.SIGINT})
    _main()

"""uvicorn serving an ASGI app (the proxy) from a background thread on an ephemeral 127.0.0.1 port.

    with ServerThread(create_app(upstream.base_url)) as srv:
        openai.OpenAI(base_url=f"{srv.url}/v1", api_key="...")
"""
from __future__ import annotations

import socket
import threading
import time
from typing import Any


class ServerThread:
    """uvicorn serving ``app`` from a background thread on an ephemeral (or given) port."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        import uvicorn

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.host, self.port = host, self.sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True,
                                       name="toolsift-proxy")

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, wait: float = 10.0) -> "ServerThread":
        self.thread.start()
        deadline = time.monotonic() + wait
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError(f"server did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()

    def __enter__(self) -> "ServerThread":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

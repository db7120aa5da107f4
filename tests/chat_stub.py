"""A local OpenAI-compatible chat-completions server for tests: each request is answered by a Python function."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class ChatStub:
    """Where the server listens (``url`` ends in ``/v1``) and every request body it received."""

    url: str
    requests: list[dict] = field(default_factory=list)


@contextlib.contextmanager
def serving(answer: Callable[[dict], str]) -> Iterator[ChatStub]:
    """Serve ``POST …/chat/completions`` on 127.0.0.1: the reply's message content is ``answer(request body)``."""
    stub = ChatStub(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server API)
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            stub.requests.append(request)
            message = {"role": "assistant", "content": answer(request)}
            body = json.dumps({"choices": [{"message": message}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stub.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield stub
    finally:
        httpd.shutdown()
        httpd.server_close()

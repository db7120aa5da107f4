"""A local OpenAI-compatible chat-completions server for tests: each request is answered by a Python function."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class ChatStub:
    """Where the server listens (``url`` ends in ``/v1``), every request body it received and the most requests
    it was answering at once."""

    url: str
    requests: list[dict] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


@contextlib.contextmanager
def serving(
    answer: Callable[[dict], str],
    usage: bool = False,
    refuse: Callable[[dict], tuple[int, str] | None] | None = None,
    raw: Callable[[dict], tuple[int, str] | None] | None = None,
    hold: Callable[[dict], float] | None = None,
) -> Iterator[ChatStub]:
    """Serve ``POST …/chat/completions`` on 127.0.0.1: the reply's message content is ``answer(request body)``;
    ``usage``: the reply reports whitespace-separated words as prompt and completion tokens, as servers do;
    ``refuse``: (HTTP status, message) to answer instead, as vLLM answers a prompt over the context; ``raw``:
    (HTTP status, body sent as it is) to answer instead; ``hold``: seconds to wait before answering."""
    stub = ChatStub(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server API)
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with stub.lock:
                stub.requests.append(request)
                stub.in_flight += 1
                stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
            try:
                if hold:
                    time.sleep(hold(request))
            finally:  # out of flight before the reply leaves: the client's next request cannot overlap it
                with stub.lock:
                    stub.in_flight -= 1
            self._answer(request)

        def _answer(self, request: dict) -> None:
            answered = raw(request) if raw else None
            if answered is not None:
                return self._send(answered[0], answered[1])
            refused = refuse(request) if refuse else None
            if refused is not None:
                error = {
                    "object": "error",
                    "message": refused[1],
                    "type": "BadRequestError",
                    "code": refused[0],
                }
                return self._send(refused[0], error)
            message = {"role": "assistant", "content": answer(request)}
            reply: dict = {"choices": [{"message": message, "finish_reason": "stop"}]}
            if usage:
                prompt = sum(len(m["content"].split()) for m in request["messages"])
                reply["usage"] = {
                    "prompt_tokens": prompt,
                    "completion_tokens": len(message["content"].split()),
                }
            self._send(200, reply)

        def _send(self, status: int, reply: dict | str) -> None:
            body = (reply if isinstance(reply, str) else json.dumps(reply)).encode()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a client that timed out left
                self.send_response(status)
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

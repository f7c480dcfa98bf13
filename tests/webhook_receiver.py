"""A real HTTP receiver on loopback for the webhook tests and drills: it records every request
(headers and body) and answers with the codes it is told to, in turn."""

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    answers: list[int] = field(default_factory=list)  # the codes to give, in turn; then `default`
    default: int = 200
    delay: float = 0.0
    received: list[Received] = field(default_factory=list)

    def __post_init__(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with receiver.lock:
                    receiver.received.append(
                        Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    code = receiver.answers.pop(0) if receiver.answers else receiver.default
                if receiver.delay:
                    threading.Event().wait(receiver.delay)
                self.send_response(code)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):  # quiet
                pass

        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/hooks/memory"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

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
    trickle: float = 0.0  # when set, the answer goes out one byte every `trickle` seconds
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
                if receiver.trickle:
                    return self.trickle(code)
                self.send_response(code)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def trickle(self, code: int):
                """A slow or hostile receiver: each byte comes within any read timeout, the whole
                answer takes minutes. Ends when the sender hangs up or the receiver stops."""
                answer = f"HTTP/1.1 {code} OK\r\ncontent-length: 2\r\n\r\nok".encode()
                self.close_connection = True
                for byte in answer:
                    if receiver.stopping.wait(receiver.trickle):
                        return
                    try:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    except OSError:  # the sender gave up on us
                        return

            def log_message(self, *args):  # quiet
                pass

        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/hooks/memory"

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

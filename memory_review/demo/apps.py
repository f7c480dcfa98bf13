from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "memory_review.demo"
    label = "demo"

    def ready(self):
        """Django's development server, which `make demo` runs (and the tests' live server), answers
        without Nagle's algorithm. It writes a response's headers and body in two sends; on a
        kept-alive connection the second waited for the client's delayed ACK: 44 ms on every
        request but the smallest (a 405 took 44 ms, /healthz 0.8). gunicorn, which serves the
        product, sets TCP_NODELAY on its sockets itself."""
        from django.core.servers.basehttp import WSGIRequestHandler

        WSGIRequestHandler.disable_nagle_algorithm = True

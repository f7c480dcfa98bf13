"""Running it: liveness and readiness, Prometheus metrics, logs that carry their context."""

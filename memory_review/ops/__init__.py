"""Running it, below every layer: the counters each layer writes (metrics), logs that carry their
context, the request middleware, a worker host's metrics server. The pages that read them, and
every layer's state, are health/."""

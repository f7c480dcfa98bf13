"""What orchestrators and Prometheus read: /healthz, /readyz and /metrics. A screen of its own at
the top, since it reads every layer (the queue's depth, assessments, Jev); the counters every
layer writes live below, in ops/metrics.py."""

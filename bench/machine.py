"""How fast this machine is, and how much of its CPU was taken from it, for a bench's figures to
be read against.

The same machine's speed moves from day to day and within an hour: BENCHMARKS.md's sessions
timed a bare loop of 10,000,000 additions at 0.58 s one day and 1.82 s another. A CPU figure
(milliseconds an event, say) is only compared with another day's through that loop's time, so
the benches print it at their start and end, where sessions used to time it by hand. Before and
after a change are still measured at the same time, alternating: the loop says how fast the
machine was, not that nothing else ran.

`/proc/stat` also says how busy the machine was (user, nice, system, irq and softirq time) and
how much time the hypervisor gave to others while this machine's work waited (steal). Guest
time is already inside user time, so it is not added twice."""

import os
import statistics
import time
from pathlib import Path

LOOP = 10_000_000
STAT = Path("/proc/stat")


# As the sessions timed it by hand (`python -c`): at a module's top level, its names globals, which
# takes about twice a function's time with locals. The same code keeps the figures one series.
_LOOP_CODE = compile(f"total = 0\nfor i in range({LOOP}):\n    total += i\n", "bare loop", "exec")


def bare_loop_s(runs: int = 3) -> float:
    """Seconds this interpreter takes for a bare loop of 10,000,000 additions: the median of `runs`."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        exec(_LOOP_CODE, {})  # this module's own constant code, in globals of its own
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def speed(runs: int = 3) -> dict:
    """The loop's seconds, the load average over the last minute, and the CPUs this machine has."""
    load = round(os.getloadavg()[0], 1)
    return {"bare_loop_s": round(bare_loop_s(runs), 2), "load_1m": load, "cpus": os.cpu_count()}


def describe(figures: dict) -> str:
    return (
        f"a bare loop of {LOOP:,} additions {figures['bare_loop_s']:.2f} s, "
        f"load {figures['load_1m']:g}, {figures['cpus']} CPUs"
    )


def cpu_seconds() -> dict[str, float]:
    """The whole machine's CPU seconds so far: `busy` (what ran) and `steal` (what the hypervisor
    gave to others while something here was ready to run); both 0 where there is no /proc/stat."""
    try:
        fields = [int(value) for value in STAT.read_text().splitlines()[0].split()[1:]]
    except (OSError, IndexError, ValueError):
        return {"busy": 0.0, "steal": 0.0}
    fields += [0] * (8 - len(fields))
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    tick = os.sysconf("SC_CLK_TCK")
    return {"busy": (user + nice + system + irq + softirq) / tick, "steal": steal / tick}

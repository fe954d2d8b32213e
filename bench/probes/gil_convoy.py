"""The GIL convoy that a GPU-feeding thread meets among busy CPU threads (no GPU needed).

    python bench/probes/gil_convoy.py

A "GPU thread" makes 200 blocking calls that release the GIL (as a kernel
wait or a copy does) with a little Python between them, while 0, 4 or 15
other threads run Python.  After each release it must win the GIL back; with
the interpreter's default switch interval (5 ms) that can take a whole round
of the busy threads.  blastp's GPU pipeline lowers the interval to 0.5 ms
while it runs (BlastSettings.switch_interval).
"""

from __future__ import annotations

import sys
import threading
import time


def busy(stop: threading.Event) -> None:
    while not stop.is_set():
        "".join(str(i) for i in range(200))


def gpu_thread(n: int = 200) -> float:
    t = time.perf_counter()
    for _ in range(n):
        time.sleep(0.0005)          # a blocking call that releases the GIL
        sum(range(200))             # a little Python between calls
    return time.perf_counter() - t


def main() -> None:
    default = sys.getswitchinterval()
    for interval in (default, 0.0005):
        sys.setswitchinterval(interval)
        for n_busy in (0, 4, 15):
            stop = threading.Event()
            threads = [threading.Thread(target=busy, args=(stop,)) for _ in range(n_busy)]
            for t in threads:
                t.start()
            seconds = gpu_thread()
            stop.set()
            for t in threads:
                t.join()
            print(f"switch interval {interval * 1e3:.1f} ms, {n_busy:2d} busy threads: "
                  f"200 GIL releases took {seconds:.3f} s", flush=True)
    sys.setswitchinterval(default)


if __name__ == "__main__":
    main()

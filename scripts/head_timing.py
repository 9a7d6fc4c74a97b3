"""Time the fused LM head against the plain path: forward + backward, one thread.

docs/models.md and docs/benchmarks.md quote this comparison (`model/head.py`'s chunked
`linear_cross_entropy` against `F.cross_entropy(F.linear(h, w).float(), t)`, summed, at 2040
targets, hidden 256, a 32k vocabulary); the figures there were timed once by hand, and this script
is how to time them again:

    OMP_NUM_THREADS=1 python scripts/head_timing.py [REPEATS]

It prints the median of REPEATS (default 20) timed calls per path, after 3 untimed ones, in wall time
and in the process's CPU time: on a shared machine the wall time moves with the other jobs' load, and
the CPU time much less, so compare the two paths of one run, by CPU time there.
"""

import statistics
import sys
import time

import torch
import torch.nn.functional as F

from encoderlab.model.head import linear_cross_entropy

N, HIDDEN, VOCAB = 2040, 256, 32768


def _median_ms(step, repeats: int) -> str:
    for _ in range(3):
        step()
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        step()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return f"{1000 * statistics.median(wall):.0f} ms wall ({1000 * statistics.median(cpu):.0f} ms CPU)"


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    torch.set_num_threads(1)
    torch.manual_seed(0)
    hidden = torch.randn(N, HIDDEN, requires_grad=True)
    weight = (0.02 * torch.randn(VOCAB, HIDDEN)).requires_grad_()
    targets = torch.randint(VOCAB, (N,))

    def fused():
        linear_cross_entropy(hidden, weight, targets).backward()

    def plain():
        F.cross_entropy(F.linear(hidden, weight).float(), targets, reduction="sum").backward()

    print(
        f"{N} targets, hidden {HIDDEN}, vocabulary {VOCAB}, 1 thread, forward + backward, median of {repeats}:"
    )
    print(f"fused head {_median_ms(fused, repeats)}, plain path {_median_ms(plain, repeats)}")


if __name__ == "__main__":
    main()

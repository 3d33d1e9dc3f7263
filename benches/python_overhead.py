"""The cost of calling the simulator from Python: a 256² render through `Simulator.render()`
(the call, the GIL released and taken back, the image handed to numpy) against the same
render's own time in Rust, measured inside the call (`render_seconds`). Prints JSON.

    python3 -m pip install ./python
    python3 benches/python_overhead.py
"""
import json
import time

import nanobragg

FLAGS = "-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -distance 100 -detpixels 256"
REPEATS = 20

sim = nanobragg.Simulator.from_flags(FLAGS)
sim.render()  # warm: pools, allocator
python, rust = [], []
for _ in range(REPEATS):
    start = time.perf_counter()
    image, stats = sim.render(statistics=True)
    python.append(time.perf_counter() - start)
    rust.append(stats["render_seconds"])
median = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
print(json.dumps({
    "pixels": image.size,
    "python_ms": round(1e3 * median(python), 3),
    "rust_ms": round(1e3 * median(rust), 3),
    "overhead_ms": round(1e3 * (median(python) - median(rust)), 3),
}))

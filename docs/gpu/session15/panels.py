# Multi-panel renders on -engine wgpu against the C program's per-panel images, and timing
import json, os, subprocess, sys, time, numpy as np
fx = "fixtures/panels"; B = os.path.abspath("target/release/nanobragg")
crystal = json.load(open(f"{fx}/c_runs.json"))["crystal"]
for name, flag, n in [("four_tilted", "-detector_expt", 4), ("cspad64", "-geom", 64), ("cspad64", "-detector_expt", 64)]:
    f = f"{fx}/{name}.{'geom' if flag == '-geom' else 'expt'}"
    c = np.fromfile(f"{fx}/{name}.c.f32", "<f4").astype(np.float64)
    for eng in ["wgpu", "cpu"]:
        out = f"/tmp/p_{name}_{eng}.bin"
        t = time.time(); p = subprocess.run([B] + crystal + [flag, f, "-engine", eng, "-floatfile", out], capture_output=True, text=True); dt = time.time() - t
        if p.returncode: print(name, flag, eng, "FAILED", p.stderr[-300:]); continue
        a = np.fromfile(out, "<f4").astype(np.float64); m = len(c) // n
        corr = min(np.corrcoef(a[k*m:(k+1)*m], c[k*m:(k+1)*m])[0, 1] for k in range(n))
        ratio = max(abs(a[k*m:(k+1)*m].sum() / c[k*m:(k+1)*m].sum() - 1) for k in range(n))
        print(f"{name} {flag} {eng}: min panel corr {corr:.7f} max |sum ratio-1| {ratio:.2e} max|d|/max {np.abs(a-c).max()/c.max():.2e} {dt:.2f}s")
subprocess.run(["python3", "examples/panels/jungfrau16m_geom.py"], stdout=open("/tmp/jf.geom", "w"), check=True)
for eng in ["wgpu", "cpu"]:
    t = time.time()
    p = subprocess.run(["/usr/bin/time", "-v", B, "-geom", "/tmp/jf.geom", "-default_F", "100", "-cell", "79", "79", "38", "90", "90", "90", "-N", "10", "-lambda", "1.0", "-oversample", "1", "-engine", eng, "-floatfile", f"/tmp/jf_{eng}.bin", "-nopgm", "-nonoise"], capture_output=True, text=True)
    rss = [l for l in p.stderr.splitlines() if "Maximum resident" in l]
    print(f"jungfrau16m {eng}: rc {p.returncode} {time.time()-t:.2f}s {rss}")
a = np.fromfile("/tmp/jf_wgpu.bin", "<f4").astype(np.float64); b = np.fromfile("/tmp/jf_cpu.bin", "<f4").astype(np.float64)
print(f"jungfrau16m wgpu vs cpu: corr {np.corrcoef(a, b)[0,1]:.7f} max|d|/max {np.abs(a-b).max()/b.max():.2e} sum ratio {a.sum()/b.sum():.6f}")

#!/usr/bin/env python3
"""Writes a CrystFEL geometry file for a Jungfrau-16M-sized detector: 32 modules of
1024 (fast) x 512 (slow) pixels of 75 um, in 8 rows of 4, with 2 mm gaps, at 120 mm.

usage: python3 examples/panels/jungfrau16m_geom.py > jf16m.geom
       nanobragg -geom jf16m.geom -default_F 100 -cell 79 79 38 90 90 90 -N 10 -lambda 1.0 \
           -oversample 1 -floatfile jf16m.bin

(the size and layout of a Jungfrau 16M; the exact module positions of a real one come from
its own geometry file). docs/panels.md reports the render's time and peak memory.
"""
PIXEL = 75e-6
NF, NS = 1024, 512
GAP = 2e-3

print("; Jungfrau-16M-sized test detector: 32 modules of 1024x512 pixels")
print("clen = 0.12")
print(f"res = {1 / PIXEL!r}")
print("photon_energy = 12398.419843320028")
width, height = NF * PIXEL + GAP, NS * PIXEL + GAP
for m in range(32):
    col, row = m % 4, m // 4
    x0 = (col - 2) * width + GAP / 2
    y0 = (row - 4) * height + GAP / 2
    name = f"m{m}"
    print(f"{name}/min_fs = 0")
    print(f"{name}/max_fs = {NF - 1}")
    print(f"{name}/min_ss = {m * NS}")
    print(f"{name}/max_ss = {(m + 1) * NS - 1}")
    print(f"{name}/fs = +1x")
    print(f"{name}/ss = +1y")
    print(f"{name}/corner_x = {x0 / PIXEL!r}")
    print(f"{name}/corner_y = {y0 / PIXEL!r}")

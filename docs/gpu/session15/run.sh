#!/bin/bash
# Device checks of session 15 (H200): parity, panels, the full integration suite on NVIDIA,
# Simulator fwd+bwd bench, shots/s. Writes to $OUT.
. .gpu/setup.sh
S=$OUT/summary.txt
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; nproc; } > $S 2>&1
echo "== parity" >> $S
timeout 90 python3 fixtures/kernel_parity.py target/release/nanobragg .gpu/golden "-engine wgpu" "-engine cpu" >> $S 2>&1; echo "rc $?" >> $S
echo "== panels" >> $S
timeout 60 python3 .gpu/panels.py >> $S 2>&1; echo "rc $?" >> $S
echo "== shots" >> $S
timeout 90 bash .gpu/shots.sh >> $S 2>&1; echo "rc $?" >> $S
echo "== bench" >> $S
timeout 120 .gpu/bench --sizes 1024 --engines wgpu --configs light --modes fwd,sim,sim-stages --reps 4 --threads 16 --out $OUT/bench1 >> $S 2>&1; echo "rc $?" >> $S
cp $OUT/bench1/bench.md $OUT/bench-light.md 2>/dev/null
echo "== integration" >> $S
(cd /work/main && NANOBRAGG_REQUIRE_WGPU=1 timeout 200 $R/.gpu/integration --test-threads 8 > $OUT/integration.txt 2>&1; echo "integration rc $?" >> $S)
tail -5 $OUT/integration.txt >> $S
grep -E "FAILED|panicked|failed" $OUT/integration.txt | head -40 >> $S

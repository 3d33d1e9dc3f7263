#!/bin/bash
# Device checks, run 3 (session 15): the final build's integration suite on NVIDIA.
. .gpu/setup.sh
nvidia-smi -L
(cd /work/main && NANOBRAGG_REQUIRE_WGPU=1 timeout 170 $R/.gpu/integration --test-threads 8 > $OUT/integration.txt 2>&1; echo "integration rc $?")
grep -E "^test result|FAILED|panicked|forward launches" $OUT/integration.txt | head -40

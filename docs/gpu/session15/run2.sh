#!/bin/bash
# Device checks, run 2 (session 15): f32 trigonometry of the tensor stages on NVIDIA.
. .gpu/setup.sh
S=$OUT/summary.txt
nvidia-smi -L > $S
echo "== launch logs" >> $S
for px in 32 256; do
  NANOBRAGG_TEST_OWN_PROCESS=kernel_autodiff::simulator_forward_launches_do_not_grow_with_the_image NANOBRAGG_TEST_KERNEL_AUTODIFF_PIXELS=$px NANOBRAGG_TEST_KERNEL_AUTODIFF_STAGES=0 CUBECL_DEBUG_OPTION=profile CUBECL_DEBUG_LOG=$OUT/launch_$px.log timeout 60 .gpu/integration kernel_autodiff::simulator_forward_launches_do_not_grow_with_the_image --exact >> $S 2>&1
done
echo "== parity (unfused and fused, against C)" >> $S
timeout 100 python3 fixtures/kernel_parity.py target/release/nanobragg .gpu/golden "-engine wgpu -fusion off" "-engine wgpu" "-engine cpu" > $OUT/parity.txt 2>&1; echo "rc $?" >> $S
grep -E "NaN|inf|FAIL" $OUT/parity.txt | head >> $S
echo "== bench" >> $S
timeout 120 .gpu/bench --sizes 512 --grad-sizes 512 --engines wgpu --configs light --modes fwd,sim,sim-stages,fwdbwd --reps 4 --threads 16 --out $OUT/bench >> $S 2>&1; echo "rc $?" >> $S
echo "== integration" >> $S
(cd /work/main && NANOBRAGG_REQUIRE_WGPU=1 timeout 200 $R/.gpu/integration --test-threads 8 > $OUT/integration.txt 2>&1; echo "integration rc $?" >> $S)
grep -E "^test result|FAILED|panicked" $OUT/integration.txt | head -40 >> $S
grep -B2 -A14 "panicked" $OUT/integration.txt | head -150 > $OUT/failures.txt

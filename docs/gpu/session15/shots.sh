# shots/s: 200 random orientations, light crystal, on wgpu and cpu (16 threads)
B=$PWD/target/release/nanobragg
L="-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -distance 100 -pixel 0.1 -nopgm"
for size in 256 1024; do N=$([ $size = 256 ] && echo 200 || echo 100); for eng in wgpu cpu; do for batch in 8 1; do
  d=/tmp/shots_${size}_${eng}_$batch; rm -rf $d; mkdir -p $d
  s=$(date +%s.%N); $B $L -detpixels $size -engine $eng -shots_random $N -seed 1 -shot_batch $batch -prefix $d/s_ > $d/log 2>&1; rc=$?
  e=$(date +%s.%N); echo "shots size $size engine $eng batch $batch rc $rc: $(python3 -c "print(f'{$e-$s:.2f} s, {$N/($e-$s):.1f} shots/s')") files $(ls $d | wc -l)"
done; done; done
cmp /tmp/shots_256_wgpu_8/s_000007.bin /tmp/shots_256_wgpu_1/s_000007.bin && echo "batch 8 = batch 1 on wgpu (shot 7)"
python3 - <<'P'
import numpy as np
a=np.fromfile('/tmp/shots_1024_wgpu_8/s_000123.bin','<f4').astype(float); b=np.fromfile('/tmp/shots_1024_cpu_8/s_000123.bin','<f4').astype(float)
print('shot 123 wgpu vs cpu: corr %.7f max|d|/max %.2e'%(np.corrcoef(a,b)[0,1], abs(a-b).max()/b.max()))
P

#!/bin/bash
# Device checks, run 3 (session 15): the final build's integration suite on NVIDIA.
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
cd .gpu && for f in *.xz; do xz -d -T0 "$f"; done; chmod +x nanobragg bench integration nanobragg-compare nanobragg-manifest; cd "$R"
mkdir -p target/release && cp .gpu/nanobragg .gpu/nanobragg-compare .gpu/nanobragg-manifest target/release/
[ -e /work/main ] || { mkdir -p /work; ln -s "$R" /work/main; }
export NANOBRAGG_GOLDEN_DIR=$R/.gpu/golden
nvidia-smi -L
(cd /work/main && NANOBRAGG_REQUIRE_WGPU=1 timeout 170 $R/.gpu/integration --test-threads 8 > $OUT/integration.txt 2>&1; echo "integration rc $?")
grep -E "^test result|FAILED|panicked|forward launches" $OUT/integration.txt | head -40

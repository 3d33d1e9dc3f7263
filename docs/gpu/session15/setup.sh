# Shared set-up of the session-15 device scripts: the Vulkan loader, the carried binaries,
# the compiled-in paths of the test binary (/work/main) and the golden images.
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
cd .gpu && for f in *.xz; do xz -d -T0 "$f"; done; chmod +x nanobragg bench integration nanobragg-compare nanobragg-manifest; cd "$R"
mkdir -p target/release && cp .gpu/nanobragg .gpu/nanobragg-compare .gpu/nanobragg-manifest target/release/
[ -e /work/main ] || { mkdir -p /work; ln -s "$R" /work/main; }
export NANOBRAGG_GOLDEN_DIR=$R/.gpu/golden

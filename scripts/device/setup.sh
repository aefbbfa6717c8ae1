# Sourced by the scripts that run ON THE DEVICE MACHINE: the repository root as
# the working directory, $final (what comes back: $OUT) and $out (a scratch
# directory), the CUDA libraries and the binaries packed into .carry/ (unpacked
# from .carry/bundle.tar.xz where the carry was compressed to fit the transfer).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 2
final=${OUT:-$root/device-out}
out=$(mktemp -d)
mkdir -p "$final"
[ -f .carry/bundle.tar.xz ] && [ ! -x .carry/timeroof ] && tar xJf .carry/bundle.tar.xz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TIMEROOF_TEST_BINARY=$root/.carry/timeroof TIMEROOF_TEST_SOURCE_DIR=$root
# NVLink multicast stays off on the shared machines (KINDS.md).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# shellcheck shell=bash
# nccl-tests for the GPU scripts (sourced by scripts/bench-gpu.sh and
# scripts/gpu-nodes.sh): the source is carried in .nccl-tests/ (a snapshot of
# github.com/NVIDIA/nccl-tests, ignored by git, never committed: copy it
# there before the run) and built here, once, into $BUILD_DIR/nccl-tests.
#   NT                      where the binaries are ($NT/all_reduce_perf)
#   build_nccl_tests LOGDIR builds them unless there (MPI, sm_90), its log
#                           in LOGDIR/nccl-tests-build.log; 1 when it cannot
NT_SRC=.nccl-tests
NT=$PWD/${BUILD_DIR:-build-gpu}/nccl-tests
build_nccl_tests() {
    local logdir=$1 mpi_home
    [ -x "$NT/all_reduce_perf" ] && return 0
    [ -d "$NT_SRC/src" ] || { echo "no $NT_SRC/src: nccl-tests is not carried, no reference"; return 1; }
    mpi_home=$(dirname "$(mpicc --showme:incdirs | tr ' ' '\n' | grep -m1 .)")
    echo "building nccl-tests (MPI_HOME=$mpi_home, sm_90) into $NT"
    make -C "$NT_SRC/src" -j"$(nproc)" MPI=1 MPI_HOME="$mpi_home" NCCL_HOME=/usr \
        CUDA_HOME=/usr/local/cuda NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" \
        BUILDDIR="$NT" >"$logdir/nccl-tests-build.log" 2>&1 ||
        { tail -20 "$logdir/nccl-tests-build.log"; return 1; }
}

#!/usr/bin/env bash
# scratch-gpu.sh: lab 05's stage 6 (issue 23) measured on the H100. Scratch:
# delete it once handouts/05-matmul.md has the numbers. Run it from the
# repository's root after `. .gpu/env.sh`, in parts that each fit in one
# 10-minute command, or all at once:
#
#   bash scratch-gpu.sh build     configure and build lab 05 for sm_90 in
#                                 build-matmul; registers and spills (ptxas)
#   bash scratch-gpu.sh tests     both sides' tests (tests/gpu-check --steps
#                                 sides: the reference passes, the skeleton
#                                 fails), the timing table, racecheck on
#                                 stages 4 to 6
#   bash scratch-gpu.sh planted   lab 05's planted bugs (gpu-check --steps planted)
#   bash scratch-gpu.sh bench     the reference's bench: every stage at 1024^3,
#                                 2048^3, 2048x6144x1536 and 4096^3 next to
#                                 cuBLAS, and the three bars of issue 23
#   bash scratch-gpu.sh all       the four in this order (default)
#
# Logs go to results-matmul/ (set OUT to change it). Exit status: 0 when
# every part run passed, 1 otherwise, 77 when there is no usable GPU.
set -u
root=$(pwd)
out=${OUT:-$root/results-matmul}
build=$root/build-matmul
part=${1:-all}
mkdir -p "$out"

if [ ! -f "$root/labs/05-matmul/kernels.cu" ]; then
    echo "run it from the repository's root" >&2
    exit 2
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "skipped: no usable GPU (nvidia-smi sees none)"
    exit 77
fi
# cuBLAS's FP32 modes use no TF32; this keeps any library from choosing it.
export NVIDIA_TF32_OVERRIDE=0
status=0

do_build() {
    echo "== build (sm_90) =="
    if [ -f "$build/build.ninja" ]; then
        meson configure "$build" -Dgpu_arch=9.0 -Dlabs=05-matmul >/dev/null || return 1
    else
        meson setup "$build" -Dgpu_arch=9.0 -Dlabs=05-matmul >"$out/setup.log" 2>&1 ||
            { tail -20 "$out/setup.log"; return 1; }
    fi
    ninja -C "$build" 2>&1 | tee "$out/build.log" | grep -E "warning|error|FAILED"
    [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
    echo "== ptxas: registers and spills of the reference's stages 4 to 6 =="
    nvcc -arch=sm_90 -Xptxas -v -c -I labs/05-matmul -I common solutions/05-matmul/kernels.cu \
        -o "$out/ptxas.o" 2>&1 | grep -A2 "Function properties for _Z13matmul_stage[456]" |
        tee "$out/ptxas.txt"
}

do_tests() {
    echo "== tests: both sides =="
    tests/gpu-check --steps sides --labs 05-matmul --build-dir "$build" --out "$out/sides" |
        tail -5
    local rc=${PIPESTATUS[0]}
    echo "== the reference's timing table (1024^3) =="
    "$build/matmul-reference" --filter 'matmul/timing_1024' --verbose 2>&1 |
        grep -v "^\[----\] *$" | tee "$out/timing.txt" | grep -E "^\[----\]|PASS|FAIL"
    echo "== racecheck: stages 4 to 6 =="
    compute-sanitizer --tool racecheck --error-exitcode 1 "$build/matmul-reference" \
        --filter 'matmul/stage[456]_*' >"$out/racecheck.txt" 2>&1
    local race=$?
    tail -3 "$out/racecheck.txt"
    [ "$rc" -eq 0 ] && [ "$race" -eq 0 ]
}

do_planted() {
    echo "== planted bugs of lab 05 =="
    tests/gpu-check --steps planted --labs 05-matmul --build-dir "$build" --out "$out/planted" |
        tail -25
    return "${PIPESTATUS[0]}"
}

do_bench() {
    echo "== bench: every stage next to cuBLAS (default and pedantic FP32, no TF32) =="
    "$build/matmul-bench-reference" 2>&1 | tee "$out/bench.txt"
    return "${PIPESTATUS[0]}"
}

case "$part" in
build | tests | planted | bench) "do_$part" || status=1 ;;
all)
    do_build || exit 1
    for step in tests planted bench; do
        "do_$step" || status=1
    done
    ;;
*)
    echo "usage: bash scratch-gpu.sh [build|tests|planted|bench|all]" >&2
    exit 2
    ;;
esac
echo "logs: $out"
exit $status

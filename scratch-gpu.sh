#!/usr/bin/env bash
# Lab 10 (stencil) on an H100: everything that needs a GPU and has NOT run
# yet (the lab was written on a machine without one). From the repository
# root, after `. .gpu/env.sh`:
#
#     bash scratch-gpu.sh                  # sides, planted, bench (about 10 min)
#     bash scratch-gpu.sh sides            # one step at a time, under a 10-minute limit
#     bash scratch-gpu.sh planted
#     bash scratch-gpu.sh bench
#     bash scratch-gpu.sh sanitize         # the reference's stage tests under the 4 tools, and
#                                          # racecheck/memcheck on the bench (small grids)
#
# What to look for (the lab is done when all hold):
#   sides    sides-stencil passes: the reference passes every test, the skeleton fails
#            every test that scores; testlog-sides.txt has the timing_stages table
#   planted  "21 of 21 planted bugs caught" (by the tests and by the judge)
#   bench    both "target: ... met" lines; the two tables (Dirichlet, then periodic) go
#            into handouts/10-stencil.md, "Measured on an H100", with the clock line
# Logs and tables land in $OUT/stencil (default gpu-results/stencil).
set -u
root=$(pwd)
out=${OUT:-$root/gpu-results}/stencil
build=${BUILD:-/tmp/b-stencil-gpu}
steps=${1:-sides,planted,bench}
mkdir -p "$out"
status=0

gpu_steps=$(echo ",$steps," | tr ',' '\n' | grep -v -x -e sanitize -e '' | paste -sd, -)
if [ -n "$gpu_steps" ]; then
    tests/gpu-check --steps "$gpu_steps" --labs 10-stencil --build-dir "$build" --out "$out"
    status=$?
fi

case ",$steps," in *,sides,*)
    echo "===== the tests' timing table (reference, then skeleton failures in testlog-sides.txt)"
    grep -A 9 "stencil, 4096" "$out/testlog-sides.txt" | head -20 ;;
esac

case ",$steps," in *,bench,*)
    echo "===== bench, Dirichlet (the reference, from gpu-check's bench step)"
    cat "$out/bench.log"
    echo "===== bench, periodic"
    "$build/stencil-bench-reference" --boundary periodic 2>&1 | tee "$out/bench-periodic.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1 ;;
esac

case ",$steps," in *,sanitize,*)
    [ -f "$build/build.ninja" ] || { meson setup "$build" -Dgpu_arch=9.0 -Dlabs=10-stencil && ninja -C "$build"; }
    echo "===== the reference's stage tests under memcheck, racecheck, synccheck, initcheck"
    python3 tests/sanitize_references.py --build "$build" --labs 10-stencil \
        >"$out/sanitize-references.log" 2>&1
    rc=$?; tail -3 "$out/sanitize-references.log"; [ "$rc" = 0 ] || status=1
    echo "===== the handout's sanitizer commands, on the reference's bench"
    for args in "--tool racecheck $build/stencil-bench-reference --stage 1 --n 100 --reps 1 --steps 1" \
                "--tool racecheck $build/stencil-bench-reference --stage 2 --n 300 --reps 1 --steps 1" \
                "--tool racecheck $build/stencil-bench-reference --stage 4 --n3 40 --reps 1 --steps 1" \
                "--tool memcheck $build/stencil-bench-reference --stage 4 --n3 40 --reps 1 --steps 1" \
                "--tool synccheck $build/stencil-bench-reference --stage 2 --n 300 --reps 1 --steps 1"; do
        echo "--- compute-sanitizer $args"
        # shellcheck disable=SC2086
        compute-sanitizer $args 2>&1 | grep -E "SUMMARY|ERROR|hazard|target" | tee -a "$out/sanitize-bench.log"
    done ;;
esac
echo "scratch-gpu.sh: logs in $out; exit status $status"
exit $status

#!/usr/bin/env bash
# Gradescope runs this once while building the autograder image: the
# repository is in $WB_AUTOGRADER_ROOT/source (default /autograder/source).
# Installs Meson, Ninja, pkg-config, Criterion, zlib and bubblewrap (the
# grader's sandbox; CUDA 13 must be in the base image, nvcc on PATH or in
# /usr/local/cuda/bin).
set -euo pipefail
root=${WB_AUTOGRADER_ROOT:-/autograder}
. "$root/source/grading/setup.sh"
WB_EXTRA_PROGRAMS="bwrap:bubblewrap" wb_ensure_tools

#!/usr/bin/env python3
"""The grader's reading of device code (grading/grader/devicecode.py), on objects
nvcc compiles here (no GPU needed): the kernels of an object, those a lab's
given header defines left out, and the evidence require_gpu rests on - an
object whose source defines no kernel of its own has none."""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "grading"))
from grader import devicecode  # noqa: E402

GIVEN = """#pragma once
// given code: a kernel the lab provides, and one the student writes
__global__ void __launch_bounds__(256) given_scale(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
__global__ void student_add(const float *a, float *b, int n);
"""
SOURCES = {
    "own": '#include "given.cuh"\n__global__ void student_add(const float *a, float *b, int n)\n'
           '{ int i = threadIdx.x; if (i < n) b[i] += a[i]; }\n'
           'template <int B> __global__ void tiled(float *x) { x[threadIdx.x] = B; }\n'
           'extern "C" void run(float *x) { tiled<128><<<1, 1>>>(x); }\n',
    "given-only": '#include "given.cuh"\nextern "C" void run(float *x, int n) { given_scale<<<1, 32>>>(x, n); }\n',
    "host-only": 'extern "C" void run(float *x, int n) { for (int i = 0; i < n; i++) x[i] *= 2.0f; }\n',
}


def compile_object(folder, name, text):
    source = os.path.join(folder, name + ".cu")
    with open(source, "w") as f:
        f.write(text)
    obj = os.path.join(folder, name + ".o")
    subprocess.run(["nvcc", "-c", "-gencode", "arch=compute_90,code=sm_90", "-o", obj, source],
                   check=True, cwd=folder)
    return obj


def main():
    if not shutil.which("nvcc"):
        print("skipped: nvcc is not on PATH")
        return 77
    folder = tempfile.mkdtemp(prefix="wbdevicecode-")
    try:
        with open(os.path.join(folder, "given.cuh"), "w") as f:
            f.write(GIVEN)
        given = devicecode.given_kernel_names(GIVEN)
        failures = []

        def expect(what, got, wanted):
            print(f"{'ok  ' if got == wanted else 'FAIL'} {what}: {got}")
            if got != wanted:
                failures.append(f"{what}: got {got}, expected {wanted}")

        expect("given header's defined kernels", sorted(given), ["given_scale"])
        objects = {name: compile_object(folder, name, text) for name, text in SOURCES.items()}
        expect("kernels of an object with its own", sorted(devicecode.own_kernels(objects["own"], given)),
               ["student_add(float const*, float*, int)", "void tiled<128>(float*)"])
        expect("an object with only the given kernel", devicecode.own_kernels(objects["given-only"], given), [])
        expect("all kernels of that object", sorted(devicecode.kernels(objects["given-only"])),
               ["_Z11given_scalePfi"])
        expect("host code only", devicecode.kernels(objects["host-only"]), set())
        lab = devicecode.lab_kernels(objects["host-only"], objects["own"], os.path.join(folder, "given.cuh"))
        expect("host-only against a reference with kernels", (lab["student"], len(lab["reference"])), ([], 2))
        expect("not an object", devicecode.kernels(os.path.join(folder, "given.cuh")), set())
        print(f"{len(failures)} failure(s)")
        return 1 if failures else 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""tests/mutation.py, the mutants of the sweep (tests/planted_bugs.py
sweep), on the CPU: each kind of classic bug is made where it applies and
nowhere else (not in comments or strings), names are unique, an atomic
made plain still compiles, a mutant the compiler throws away gives the
reference's own object while one that counts does not (nvcc, when
present), and tests/planted/equivalent.toml's entries each name a mutant
of the reference as it is now."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "grading"))

from shared import labs  # noqa: E402
import mutation  # noqa: E402
import planted_bugs  # noqa: E402

SAMPLE = """#include <cuda_runtime.h>
// a comment with __syncthreads(); and i < n
__global__ void k(int *x, const int *y, int n, volatile int *flag)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (; i < n; i += gridDim.x * blockDim.x) {
        x[i] += y[i];
        __syncthreads();
        __syncwarp();
        __threadfence();
        atomicAdd(&x[0], 1);
    }
    if (i >= n && n > 0)
        return;
    const char *s = "i < n";
}
void host(cudaStream_t s) { CUDA_CHECK(cudaStreamSynchronize(s)); }
"""


def changes(text):
    return {(m["name"].split("-", 1)[1], m["after"]) for m in mutation.mutants(text)}


class Mutants(unittest.TestCase):
    def test_every_kind_where_it_applies(self):
        found = changes(SAMPLE)
        wanted = {
            ("no-blockidx", "int i = 0 * blockDim.x + threadIdx.x;"),
            ("lt-to-le", "for (; i <= n; i += gridDim.x * blockDim.x) {"),
            ("stride-blockdim", "for (; i < n; i += blockDim.x) {"),
            ("plus-eq-to-eq", "x[i] = y[i];"),
            ("drop-syncthreads", ";"),
            ("drop-syncwarp", ";"),
            ("drop-fence", ";"),
            ("plain-rmw", "mutant_plain_Add(&x[0], 1);"),
            ("ge-to-gt", "if (i > n && n > 0)"),
            ("gt-to-ge", "if (i >= n && n >= 0)"),
            ("drop-guard", "if (false)"),
            ("drop-guard-2", "if (n > 0)"),
            ("drop-guard-3", "if (i >= n)"),
            ("drop-volatile", "__global__ void k(int *x, const int *y, int n, int *flag)"),
            ("drop-sync", "void host(cudaStream_t s) { ; }"),
        }
        self.assertEqual(wanted - found, set(), "mutants not made")

    def test_nothing_in_comments_or_strings(self):
        for m in mutation.mutants(SAMPLE):
            self.assertNotIn("a comment", m["before"], m["name"])
            self.assertNotIn('"i', m["before"], m["name"])

    def test_each_mutant_changes_one_place_and_names_are_unique(self):
        for folder, _ in labs.all_labs():
            with open(os.path.join(ROOT, "solutions", folder, "kernels.cu")) as f:
                reference = f.read()
            found = mutation.mutants(reference)
            self.assertTrue(found, f"{folder}: no mutants")
            names = [m["name"] for m in found]
            self.assertEqual(len(names), len(set(names)), folder)
            for m in found:
                self.assertNotEqual(m["text"], reference, f"{folder}/{m['name']}")

    @unittest.skipUnless(shutil.which("nvcc"), "nvcc is not installed")
    def test_a_plain_atomic_compiles(self):
        mutant = next(m for m in mutation.mutants(SAMPLE.replace("CUDA_CHECK", ""))
                      if m["kind"] == "atomic")
        with tempfile.TemporaryDirectory() as tmp:
            source = os.path.join(tmp, "mutant.cu")
            with open(source, "w") as f:
                f.write(mutant["text"])
            proc = subprocess.run(["nvcc", "-c", "-arch=sm_90", source, "-o", source + ".o"],
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)

    @unittest.skipUnless(shutil.which("nvcc"), "nvcc is not installed")
    def test_equivalent_mutant_compiles_to_the_references_object(self):
        reference = WARP_SCAN
        equivalent = reference.replace("if (i < n)", "if (n > i)")   # the same test
        different = reference.replace("if (i < n)", "if (i <= n)")   # one element too far
        with tempfile.TemporaryDirectory() as tmp:
            source = os.path.join(tmp, "kernels.cu")   # one path: as the grader compiles

            def compiled(text):
                with open(source, "w") as f:
                    f.write(text)
                proc = subprocess.run(["nvcc", "-c", "-O3", "-arch=sm_90", source, "-o",
                                       source + ".o"], capture_output=True, text=True)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                return planted_bugs.compiled_bytes(source + ".o")

            unchanged = compiled(reference)
            self.assertEqual(compiled(reference), unchanged, "the same text twice")
            self.assertEqual(compiled(equivalent), unchanged, "the same bound, written n > i")
            self.assertNotEqual(compiled(different), unchanged, "a bound one too far")

    def test_equivalent_entries_name_one_mutant_each(self):
        twice = "if (i < n)\n    x[i] = 1;\nif (i < n)\n    x[i] = 2;\n"
        numbered = [(m["name"], k) for m, k in planted_bugs.numbered(mutation.mutants(twice))
                    if m["after"] == "if (i <= n)"]
        self.assertEqual([k for _, k in numbered], [1, 2], "the same change on two lines")
        lab = labs.all_labs()[0][0]
        with open(os.path.join(ROOT, "solutions", lab, "kernels.cu")) as f:
            some = next(m for m in mutation.mutants(f.read())   # a line TOML takes as it is
                        if not set('"\\') & set(m["before"] + m["after"]))
        with tempfile.NamedTemporaryFile("w", suffix=".toml") as toml:
            toml.write(f'[[equivalent]]\nlab = "{lab}"\nbefore = "{some["before"]}"\n'
                       f'after = "{some["after"]}"\nwhy = "read"\n\n'
                       f'[[equivalent]]\nlab = "{lab}"\nbefore = "{some["before"]}"\n'
                       f'after = "a line the reference never had"\nwhy = "stale"\n')
            toml.flush()
            kept, planted_bugs.EQUIVALENT = planted_bugs.EQUIVALENT, toml.name
            try:
                problems = planted_bugs.equivalent_problems([lab])
            finally:
                planted_bugs.EQUIVALENT = kept
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("no mutant of the reference makes this change now", problems[0])
        self.assertEqual(planted_bugs.equivalent_problems([f for f, _ in labs.all_labs()]), [],
                         "tests/planted/equivalent.toml: every entry applies")


WARP_SCAN = """__global__ void warp_scan(unsigned *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = x[min(i, n - 1)], lane = threadIdx.x % 32;
#pragma unroll
    for (unsigned offset = 1; offset < 32; offset *= 2) {
        unsigned left = __shfl_up_sync(0xffffffffu, v, offset);
        if (lane >= offset)
            v += left;
    }
    if (i < n)
        x[i] = v;
}
"""


if __name__ == "__main__":
    unittest.main()

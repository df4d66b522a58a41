#!/usr/bin/env python3
"""labs/05-matmul/roofline.py on made-up benchmark and Nsight Compute files:
measured and analytic DRAM bytes, each stage's bound, and the error when a
stage is above its roof (a wrong ceiling or count must not draw quietly)."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "labs", "05-matmul", "roofline.py")
N = 4096
FLOPS = 2.0 * N ** 3

BENCH = """m,n,k,stage,tile,time (ms),GFLOP/s,% of cuBLAS,CGMA,error
4096,4096,4096,cuBLAS,-,2.680,51280,100.0,-,-
4096,4096,4096,0,-,142.424,{stage0},1.9,1,0.0e+00
4096,4096,4096,2,32,14.942,9198,17.9,32,0.0e+00
4096,4096,4096,5,-,3.302,41620,81.2,128,0.0e+00
"""
CEILINGS = """ceiling,value,unit,how
DRAM,3000,GB/s,copy
FP32,66900,GFLOP/s,peak
shared memory,33400,GB/s,banks
"""


def ncu_rows(kernel, launch, dram, wavefronts):
    """Nsight Compute --csv rows of one launch, with its quoting and commas."""
    metrics = {"dram__bytes_read.sum": dram * 0.99, "dram__bytes_write.sum": dram * 0.01,
               "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": wavefronts,
               "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": FLOPS / 2}
    return ["".join(f'"{launch}","1","bench","host","{kernel}","1","7","(256, 1, 1)","(9, 1, 1)",'
                    f'"0","9.0","Command line profiler metrics","{name}","","{value:,.0f}"\n')
            for name, value in metrics.items()]


def run(folder, *extra):
    return subprocess.run([sys.executable, SCRIPT, folder, "-o", os.path.join(folder, "r.svg"), *extra],
                          capture_output=True, text=True)


def main():
    failures = []

    def expect(what, ok, result):
        if not ok:
            failures.append(f"{what}:\n{result.stdout}{result.stderr}")

    with tempfile.TemporaryDirectory() as folder:
        def write(name, text):
            with open(os.path.join(folder, name), "w") as f:
                f.write(text)

        write("matmul-ceilings.csv", CEILINGS)
        write("matmul-bench.csv", BENCH.format(stage0=965))
        header = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
                  '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
                  '"Metric Value"\n')
        ncu = ["==PROF== Connected to process 1\n", "clocks: SM 1980 MHz\n", header]
        ncu += ncu_rows("matmul_stage0(const float *, const float *, float *, int, int, int)", 0, 16.5e9, 0)
        ncu += ncu_rows("matmul_stage0(const float *, const float *, float *, int, int, int)", 1, 16.6e9, 0)
        ncu += ncu_rows("void matmul_stage2<32>(const float *, const float *, float *, int, int, int)",
                        2, 8.4e9, 3.22e9)
        ncu += ncu_rows("matmul_stage5(const float *, const float *, float *, int, int, int)", 3, 0.69e9, 0.41e9)
        write("ncu.csv", "".join(ncu))

        r = run(folder)
        expect("analytic bytes: exit 0", r.returncode == 0, r)
        expect("analytic bytes: labelled", "analytic minimum" in r.stdout, r)
        r = run(folder, "--ncu", os.path.join(folder, "ncu.csv"))
        expect("measured bytes: exit 0", r.returncode == 0, r)
        lines = {line.split()[1]: line for line in r.stdout.splitlines() if line.startswith("stage ")}
        expect("stage 0 is bound by DRAM", "DRAM" in lines.get("0", ""), r)
        expect("stage 2 is bound by shared memory", "shared memory" in lines.get("2", ""), r)
        expect("stage 5 is bound by the FP32 peak", "FP32" in lines.get("5", ""), r)
        with open(os.path.join(folder, "r.svg")) as f:
            expect("the plot says the bytes were measured", "measured by Nsight Compute" in f.read(), r)

        write("matmul-bench.csv", BENCH.format(stage0=40000))   # above 16.6 GB's DRAM roof
        r = run(folder, "--ncu", os.path.join(folder, "ncu.csv"))
        expect("a stage above its roof: exit 1", r.returncode == 1, r)
        expect("a stage above its roof: named", "stage 0 measured 40000" in r.stderr, r)

        os.remove(os.path.join(folder, "matmul-ceilings.csv"))
        r = run(folder)
        expect("no ceilings: a clear error", r.returncode != 0 and "ceilings" in r.stderr, r)

    for f in failures:
        print("FAIL", f)
    print(f"roofline: {'all checks passed' if not failures else f'{len(failures)} failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

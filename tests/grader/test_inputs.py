"""The grader's input and output edges, on the CPU (no GPU, a few seconds).

Archives: hostile ones are built on the fly in a temporary folder (bombs
from repeated compressed blocks of zeros, so the test stays small and fast)
and each must make submission.read raise Rejected with a one-line message
within TIME_LIMIT seconds, never another exception, a MemoryError or
minutes; the well-formed ones must still be read. Every archive is read in a
child process under a strict UTF-8 locale (LC_ALL=C.UTF-8,
PYTHONIOENCODING=utf-8) and under LC_ALL=C, printing what it got as the
grader would.

Whole copies: a student copy made by `workbook release` with lab 00
solved, zipped, and a repository tarball with build folders, .git and
backups: each lab's labs/NN/kernels.cu is read, the rest listed as ignored
by folder; two different copies of a lab are refused.

The include check (includes.include_problems): spellings that hide an
include from a text check (a byte-order mark, NUL, CR and CRLF splices,
comment openers in strings, raw strings, _Pragma, joined asm strings) are
refused, honest code passes, and 1 MiB of any shape is checked in seconds.

Reports: a made-up report full of control characters, lone surrogates,
NaN and infinity is written by reports.write_all; the JUnit XML must parse,
the JSON parse strictly (no NaN, Infinity), results.json validate, the CSV
hold no 'nan', the scoreboard print on a strict UTF-8 terminal. Then
`workbook grade` on a bomb, and a grade that raises: every report written."""
import argparse
import bz2
import contextlib
import csv
import gzip
import io
import json
import lzma
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "grading"))
from grader import reports      # noqa: E402
from grader import submission   # noqa: E402

LAB = "00-vector-add"
FOLDERS = [LAB, "01-sync-up"]
KERNEL = f"labs/{LAB}/kernels.cu"
TIME_LIMIT = 2.0
MEMORY_MIB = 200   # the reader's peak: an archive in memory is at most 64 MiB
ZEROS = b"\0" * (8 << 20)
LOCALES = ({"LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}, {"LC_ALL": "C"})


# ------------------------------------------------------- archive builders
def source(size=20000):
    """Kernel-like text that does not compress to nothing."""
    lines = (f"__global__ void k{i}(float *x) {{ x[{i}] = {i * 7919 % 10007}.0f; }}\n"
             for i in range(size // 40 + 1))
    return "".join(lines).encode()[:size]


def tar_bytes(members, fmt=tarfile.GNU_FORMAT, encoding="utf-8"):
    """A plain tar of (name, bytes of a file, or a str: a TarInfo type) members."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt, encoding=encoding,
                      errors="surrogateescape") as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if isinstance(data, bytes):
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
            else:
                info.type = data.encode()
                info.linkname = "/etc/passwd"
                t.addfile(info)
    return buf.getvalue()


def bomb(compress, name="data.bin", claimed=1 << 40, repeats=16):
    """A tar whose one member claims `claimed` bytes (a terabyte), followed by
    repeats x 8 MiB of zeros: each block compressed once and repeated
    (gzip, bzip2 and xz all read concatenated streams). An ignored name must
    be skipped through, a kernels.cu read: both must stop early."""
    header = tarfile.TarInfo(name)
    header.size = claimed
    block = compress(ZEROS)
    return compress(header.tobuf(tarfile.GNU_FORMAT)) + block * repeats


def zip_bytes(members, method=zipfile.ZIP_DEFLATED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in members:
            z.writestr(name, data)
    return bytearray(buf.getvalue())


def patch_zip(data, field, value, fmt="<I"):
    """Sets a field of the first member in both its local header and its
    central directory entry: field is (local offset, central offset)."""
    central = data.find(b"PK\x01\x02")
    for at in (field[0], central + field[1]):
        data[at:at + struct.calcsize(fmt)] = struct.pack(fmt, value)
    return bytes(data)


CRC, USIZE, FLAGS = (14, 16), (22, 24), (6, 8)   # (local, central) offsets


def understated(method):
    """A zip whose bzip2 or lzma member of 16 MiB of zeros says it has 100 bytes."""
    return patch_zip(zip_bytes([(KERNEL, b"\0" * (16 << 20))], method), USIZE, 100)


def bad_crc(method):
    data = zip_bytes([(KERNEL, source())], method)
    central = data.find(b"PK\x01\x02")
    (crc,) = struct.unpack("<I", data[central + CRC[1]:central + CRC[1] + 4])
    return patch_zip(data, CRC, crc ^ 1)


def bad_name_zip(utf8_flag):
    """A zip whose first member is named kernelsX.cu with X patched to the
    byte 0xff, with or without the flag that says names are UTF-8; then KERNEL."""
    data = zip_bytes([(f"{LAB}/kernelsX.cu", source()), (KERNEL, source())])
    data = bytearray(data.replace(b"kernelsX.cu", b"kernels\xff.cu"))
    return patch_zip(data, FLAGS, 0x800 if utf8_flag else 0, "<H")


def many_zip(count):
    return bytes(zip_bytes([(f"f{i}", b"") for i in range(count)], zipfile.ZIP_STORED))


def half(data):
    return data[:len(data) // 2]


def hostile():
    """{file name: bytes} of archives that must be rejected."""
    kernel = source()
    good_tgz = gzip.compress(tar_bytes([(KERNEL, kernel)]))
    good_zip = bytes(zip_bytes([(KERNEL, kernel)]))
    corrupt = bytearray(good_tgz)
    corrupt[len(corrupt) // 2] ^= 0xFF
    return {
        # bombs: a terabyte claimed, 128 MiB there; the name lies about the compressor
        "bomb-bzip2-inside.tar.gz": bomb(bz2.compress),
        "bomb.tar.gz": bomb(gzip.compress),
        "bomb.tar.xz": bomb(lzma.compress),
        "bomb-kernel.tar.bz2": bomb(bz2.compress, KERNEL),
        "claims-1TiB.tar": bomb(bytes, KERNEL, repeats=1),
        "sparse-huge.tar": b"",   # extended past MAX_ARCHIVE_BYTES by make_files
        "understated-bzip2.zip": understated(zipfile.ZIP_BZIP2),
        "understated-lzma.zip": understated(zipfile.ZIP_LZMA),
        "too-large-deflate.zip": bytes(zip_bytes([(KERNEL, b"\0" * (2 << 20))])),
        "too-large.tar.bz2": bz2.compress(tar_bytes([(KERNEL, b"\0" * (2 << 20))])),
        # corrupt data and checksums
        "bad-crc-stored.zip": bad_crc(zipfile.ZIP_STORED),
        "bad-crc-bzip2.zip": bad_crc(zipfile.ZIP_BZIP2),
        "bad-crc-lzma.zip": bad_crc(zipfile.ZIP_LZMA),
        "corrupt.tar.gz": bytes(corrupt),
        "truncated.tar.gz": half(good_tgz),
        "truncated.tar.bz2": half(bz2.compress(tar_bytes([(KERNEL, kernel)]))),
        "truncated.tar.xz": half(lzma.compress(tar_bytes([(KERNEL, kernel)]))),
        "truncated.zip": half(good_zip),
        "not-a-zip.zip": b"PK\x03\x04" + b"not a zip at all\n" * 10,
        "text.tar.gz": b"just some text\n" * 100,
        "empty.tgz": b"",
        # names
        "bad-utf8-name-flagged.zip": bad_name_zip(True),
        "bad-utf8-name.tar": tar_bytes([(f"{LAB}/kernels\udcff.cu", kernel)]),
        "bad-utf8-name-pax.tar.gz": gzip.compress(
            tar_bytes([(f"{LAB}/k\udcff.cu", kernel)], tarfile.PAX_FORMAT)),
        "absolute.tar": tar_bytes([("/etc/" + KERNEL, kernel)]),
        "traversal.zip": bytes(zip_bytes([("../../" + KERNEL, kernel)])),
        "symlink.tar.gz": gzip.compress(tar_bytes([(KERNEL, tarfile.SYMTYPE.decode())])),
        "hardlink.tar": tar_bytes([(KERNEL, tarfile.LNKTYPE.decode())]),
        "fifo.tar": tar_bytes([(f"{LAB}/pipe", tarfile.FIFOTYPE.decode())]),
        "two-different-copies.zip": bytes(zip_bytes([(KERNEL, kernel), (f"{LAB}/kernels.cu", b"x")])),
        # counts
        "many-members.tar.gz": gzip.compress(
            tar_bytes([(f"f{i}", b"") for i in range(submission.MAX_MEMBERS + 1)])),
        "many-members.zip": many_zip(submission.MAX_MEMBERS + 1),
    }


def wellformed():
    """{file name: (bytes, names ignored)} of archives that must be read, each
    with KERNEL = source()."""
    kernel = source()
    members = [(KERNEL, kernel), ("notes\x1b[31m.txt", b"ignored")]
    plain = tar_bytes(members)
    out = {f"ok.{ext}": (squeeze(plain), ["notes\\x1b[31m.txt"])
           for ext, squeeze in (("tar", bytes), ("tar.gz", gzip.compress),
                                ("tar.bz2", bz2.compress), ("tar.xz", lzma.compress))}
    for method in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        out[f"ok-method{method}.zip"] = (bytes(zip_bytes(members, method)), ["notes\\x1b[31m.txt"])
    # zip's legacy names (no UTF-8 flag) are cp437: readable, and merely ignored
    out["ok-cp437-name.zip"] = (bad_name_zip(False), [f"{LAB}/kernels\\xa0.cu"])
    out["ok-gzip-named.zip"] = (gzip.compress(plain), ["notes\\x1b[31m.txt"])
    return out


def folders(base):
    """Folder submissions: {name: expect 'ok' or 'rejected'}."""
    made = {}
    for name, extra, expect in (("ok-folder", None, "ok"), ("bad-utf8-folder", b"k\xff.cu", "rejected"),
                                ("symlink-folder", "link", "rejected")):
        top = os.path.join(base, name)
        os.makedirs(os.path.join(top, LAB))
        with open(os.path.join(top, LAB, "kernels.cu"), "wb") as f:
            f.write(source())
        if extra == "link":
            os.symlink("/etc/passwd", os.path.join(top, LAB, "other.cu"))
        elif extra:
            with open(os.path.join(os.fsencode(top), os.fsencode(LAB), extra), "wb") as f:
                f.write(b"x")
        made[name] = expect
    return made


# ---------------------------------------------------------------- reading
def read_each(paths):
    """The child: reads each submission and prints one JSON line per path,
    the message as is (ensure_ascii=False), as the grader would print it."""
    for path in paths:
        start = time.monotonic()
        try:
            files, ignored = submission.read(path, FOLDERS)
            got = {"outcome": "ok", "files": sorted("/".join(k) for k in files),
                   "same": files.get((LAB, "kernels.cu")) == source(), "ignored": ignored}
        except submission.Rejected as e:
            got = {"outcome": "rejected", "message": str(e)}
        except BaseException as e:   # noqa: B902 -- anything else is the failure being tested
            got = {"outcome": "crashed", "message": f"{type(e).__name__}: {e}"}
        got.update(path=os.path.basename(path), seconds=round(time.monotonic() - start, 3))
        print(json.dumps(got, ensure_ascii=False), flush=True)
    print(json.dumps({"path": "peak", "mib": peak_mib()}))


def peak_mib():
    """This process's peak resident memory (Linux's VmHWM: unlike getrusage's
    maxrss, it does not count what the parent held when it forked us)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) >> 10 for l in f if l.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return 0


def make_files(base, good):
    """Writes every submission under base; returns {name: 'ok' or 'rejected'}."""
    expected = {}
    for name, data in list(hostile().items()) + [(n, d) for n, (d, _) in good.items()]:
        with open(os.path.join(base, name), "wb") as f:
            f.write(data)
        expected[name] = "ok" if name in good else "rejected"
    # A file too large to be a submission, all zeros and sparse (nothing on disk).
    os.truncate(os.path.join(base, "sparse-huge.tar"), submission.MAX_ARCHIVE_BYTES + 1)
    expected.update(folders(base))
    return expected


def check_archives(base):
    """Problems with reading every submission under both locales; also
    returns the slowest time seen."""
    good = wellformed()
    expected = make_files(base, good)
    problems, slowest = [], 0.0
    for env in LOCALES:
        proc = subprocess.run([sys.executable, __file__, "--read"]
                              + [os.path.join(base, n) for n in sorted(expected)],
                              env=dict(os.environ, **env), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        where = " ".join(f"{k}={v}" for k, v in env.items())
        if proc.returncode != 0 or proc.stderr:
            problems.append(f"[{where}] the reader exited with {proc.returncode}: "
                            + proc.stderr.decode("utf-8", "replace")[-500:])
        lines = proc.stdout.decode("utf-8").splitlines()
        got = {r["path"]: r for r in map(json.loads, lines)}
        peak = got.get("peak", {}).get("mib", 0)
        print(f"  the reader's peak memory: {peak} MiB")
        if peak > MEMORY_MIB:
            problems.append(f"[{where}] the reader took {peak} MiB of memory")
        for name, want in sorted(expected.items()):
            r = got.get(name)
            if r is None:
                problems.append(f"[{where}] {name}: no result")
                continue
            slowest = max(slowest, r["seconds"])
            detail = r.get("message") or r.get("ignored")
            print(f"  {name:28} {r['outcome']:9} {r['seconds']:6.3f} s  {detail}")
            if r["outcome"] != want:
                problems.append(f"[{where}] {name}: {r['outcome']} (want {want}): {detail}")
            elif r["seconds"] > TIME_LIMIT:
                problems.append(f"[{where}] {name}: took {r['seconds']} s")
            elif want == "rejected" and ("\n" in r["message"] or not r["message"].isprintable()):
                problems.append(f"[{where}] {name}: message not one printable line")
            elif want == "ok" and (not r["same"] or r["files"] != [f"{LAB}/kernels.cu"]):
                problems.append(f"[{where}] {name}: read {r['files']}, content right: {r['same']}")
            elif name in good and r["ignored"] != good[name][1]:
                problems.append(f"[{where}] {name}: ignored {r['ignored']}")
    return problems, slowest


# ----------------------------------------------------------- whole copies
def whole_copy_problems(base):
    """A whole student copy (grading/workbook release) zipped with lab 00
    solved, and a repository tarball with build folders, .git and backups:
    every lab's file is labs/NN/kernels.cu, the grader's skeletons, the
    solutions, build folders and backups are ignored and listed by folder;
    two different copies of a lab refuse the submission, identical ones do
    not."""
    copy = os.path.join(base, "student-copy")
    # From the files as they are: any checkout (a copy without .git too) makes one.
    subprocess.run([os.path.join(ROOT, "grading", "workbook"), "release", "--from-working-tree", "--out", copy],
                   stdout=subprocess.DEVNULL, check=True)
    solved = open(os.path.join(ROOT, "solutions", LAB, "kernels.cu"), "rb").read()
    folders = sorted(f for f in os.listdir(os.path.join(copy, "labs")) if f[:2].isdigit())
    members = {}
    for top, _, names in os.walk(copy):
        for name in names:
            path = os.path.join(top, name)
            members[os.path.relpath(path, base)] = open(path, "rb").read()
    members[f"student-copy/{KERNEL}"] = solved
    repository = {f"workbook/{name.split('/', 1)[1]}": data for name, data in members.items()
                  if "/grading/skeletons/" not in name}
    repository.update({f"workbook/solutions/{LAB}/kernels.cu": solved,
                       f"workbook/build/{LAB}/kernels.cu": b"generated",
                       "workbook/build-gpu/vector-add.p/kernels.cu.o": b"\x7fELF",
                       "workbook/.git/HEAD": b"ref: refs/heads/main\n",
                       f"workbook/{KERNEL}.bak": b"old", f"workbook/{KERNEL}~": b"older",
                       f"workbook/labs.orig/{LAB}/kernels.cu": b"oldest"})
    cases = {  # name: (bytes, the folders ignored by folder, rejected?)
        "student-copy.zip": (bytes(zip_bytes(sorted(members.items()))),
                             [f"student-copy/grading/skeletons/ ({len(folders)} files)"], False),
        "repository.tar.gz": (gzip.compress(tar_bytes(sorted(repository.items()))),
                              ["workbook/.git/ (1 file)", "workbook/build-gpu/ (1 file)",
                               "workbook/build/ (1 file)", "workbook/labs.orig/ (1 file)",
                               "workbook/solutions/ (1 file)"], False),
        "same-twice.zip": (bytes(zip_bytes([(KERNEL, solved), (f"{LAB}/kernels.cu", solved)])), [], False),
        "two-different.tar": (tar_bytes([(KERNEL, solved), (f"old/{KERNEL}", b"other")]), [], True),
    }
    problems = []
    for name, (data, ignored_folders, rejected) in cases.items():
        path = os.path.join(base, name)
        with open(path, "wb") as f:
            f.write(data)
        start = time.monotonic()
        try:
            files, ignored = submission.read(path, folders)
        except submission.Rejected as e:
            if not rejected or "two different copies" not in str(e):
                problems.append(f"{name}: rejected: {e}")
            continue
        seconds = time.monotonic() - start
        print(f"  {name:20} read in {seconds:.3f} s, ignored: {ignored[:8]}")
        if rejected:
            problems.append(f"{name}: not rejected")
        elif files.get((LAB, "kernels.cu")) != solved:
            problems.append(f"{name}: lab 00 is not the solved labs/{LAB}/kernels.cu")
        elif name != "same-twice.zip" and sorted(f for f, _ in files) != folders:
            problems.append(f"{name}: read {sorted(files)}, not every lab")
        elif sorted(i for i in ignored if i.endswith(("file)", "files)"))) != ignored_folders:
            problems.append(f"{name}: ignored folders {ignored}")
        elif len(ignored) > submission.MAX_IGNORED_LISTED + len(ignored_folders) + 1:
            problems.append(f"{name}: {len(ignored)} ignored names listed (not bounded)")
        elif seconds > TIME_LIMIT:
            problems.append(f"{name}: took {seconds:.1f} s")
    return problems


# ---------------------------------------------------------- include check
# (text, refused?): spellings that hide an include, a file read or a
# pragma from a check of the text, and honest code that must pass.
INCLUDE_TEXTS = [
    ('\ufeff#include "/dev/ptmx"\n', True),
    ('int x;\n\0#include "/dev/ptmx"\n', True),
    ('#inc\\\r\nlude "/dev/ptmx"\r\n', True),
    ('#inc\\\rlude "/dev/ptmx"\r', True),
    ('#include \\ \t\n"/dev/zero"\n', True),
    ('??=include ??/\n"/dev/ptmx"\n', True),
    ('%: /* a comment */ include "/dev/ptmx"\n', True),
    ('const char *s = "/*";\n#include "/dev/ptmx"\nconst char *t = "*/";\n', True),
    ("char c = '\"'; /* x */\n#include \"/dev/ptmx\"\n", True),
    ('auto s = R"x(" /* )x";\n#include "../../solutions/00-vector-add/kernels.cu"\n/* */\n', True),
    ('#include </*x>\n#include "/dev/ptmx"\n*/\n', True),
    ('int n = 1\'000\'000; // it\'s\n#include "/dev/ptmx"\n', True),
    ('_Pragma("GCC dependency \\"/dev/ptmx\\"")\n', True),
    ('_Pragma /* x */ (u8R"(GCC dependency "/dev/ptmx")")\n', True),
    ('#pragma GCC dependency "/dev/ptmx"\n', True),
    ('asm(".inc" "bin \\"/dev/zero\\"");\n', True),
    ('asm(".in" /* joined */\n    "clude \\"/etc/passwd\\"");\n', True),
    ('asm(R"(.incbin "/dev/zero")");\n', True),
    ('#define TEXT(x) #x\nasm(TEXT(.incbin "/dev/zero"));\n', True),
    ('#include <kernels.cu>\n', True),
    ('#include <labs/00-vector-add/kernels.cu>\n', True),
    ('#include "lab.h"\r\n#include <stdio.h>\r\n#include <cuda/std/atomic>\n', False),
    ('\ufeff#include <cuda/atomic>\n#include <sys//types.h>\n', False),
    ('const char *url = "http://x/*"; /* a */\n#include "lab.h"\n', False),
    ('const char *doc = R"(\n#include "/dev/ptmx"\n)";\n', False),
    ('struct S { int include; } s;\nint f() { return s.include; }\n', False),
    ('#pragma unroll\n#pragma once\nprintf("%s", ".in" "c");\n', False),
    ('int a = 1 << 2; // <- not a header\n', False),
]
# Each text of this shape and size (a submission's file is at most 1 MiB)
# must be checked in under INCLUDE_CHECK_S: the check is linear.
INCLUDE_WORST = {"words": "abc " * (1 << 18), "newlines": "\n" * (1 << 20),
                 "strings": '"a" ' * (1 << 18), "comments": "/**/" * (1 << 18)}
INCLUDE_CHECK_S = 15


def include_check_problems():
    from shared import includes
    problems = []
    for text, refused in INCLUDE_TEXTS:
        found = includes.include_problems(text, {"lab.h"})
        if bool(found) != refused:
            problems.append(f"include check: {text!r}: {found or 'passed'}")
    for name, text in INCLUDE_WORST.items():
        start = time.monotonic()
        includes.include_problems(text, {"lab.h"})
        seconds = time.monotonic() - start
        print(f"  include check of 1 MiB of {name}: {seconds:.2f} s")
        if seconds > INCLUDE_CHECK_S:
            problems.append(f"include check: 1 MiB of {name} took {seconds:.0f} s")
    return problems


# ---------------------------------------------------------------- reports
def nasty_report():
    """A report as the grader could make it from hostile output and timings."""
    text = "error: \x1b[31mboom\x1b[0m \x00\x07\x0c \udcff \ufffe \uffff ]]> & <x/> \"'\n"
    tests = [{"name": f"vector-add/{t}", "test": t, "suite": "s", "status": status,
              "score": score, "max_score": 2.0, "output": text, "visibility": "visible",
              "seconds": seconds}
             for t, status, score, seconds in (("stage0_a\x01", "passed", 2.0, 0.5),
                                               ("stage1_b", "failed", float("nan"), float("inf")))]
    lab = {"lab": "vector-add", "folder": LAB, "build": "ok", "message": text, "tests": tests,
           "score": float("nan"), "max_score": 12.0, "gpu_ran": True,
           "perf": {"test": "timing_x", "reference_ms": 1.0, "student_ms": float("nan"),
                    "speed_vs_reference": float("inf"), "score": float("nan"), "max_score": 2.0}}
    return reports.make([lab], 3.0, "sub\x1b.zip", ["a\x00b"], "sandbox\ufffe")


def strict_json(path):
    def refuse(name):
        raise ValueError(f"{name} in {os.path.basename(path)}")
    with open(path, encoding="utf-8") as f:
        return json.loads(f.read(), parse_constant=refuse)


def outputs(base, name):
    return {kind: os.path.join(base, f"{name}.{kind}") for kind in ("gradescope", "junit", "json", "csv")}


def parsed(out):
    """(full report, results.json, JUnit root, problems) of the written
    reports out, each parsed strictly."""
    report, doc = strict_json(out["json"]), strict_json(out["gradescope"])
    problems = [f"results.json: {p}" for p in reports.validate_gradescope(doc)]
    root = ET.parse(out["junit"]).getroot()
    with open(out["csv"], encoding="utf-8") as f:
        text = f.read()
    if "nan" in text.lower() or len(list(csv.DictReader(io.StringIO(text)))) != 1:
        problems.append("the CSV has 'nan' or not one row")
    return report, doc, root, problems


def scoreboard_problems(report):
    """The scoreboard printed on a strict UTF-8 terminal."""
    stdout = sys.stdout
    sys.stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    try:
        reports.print_scoreboard(report)
        sys.stdout.flush()
        return []
    except Exception as e:   # noqa: B902 -- any failure to print is the finding
        return [f"the scoreboard: {type(e).__name__}: {e}"]
    finally:
        sys.stdout = stdout


def check_reports(base):
    """The reports of a made-up report full of hostile text and numbers, and
    of a failed and a rejected submission."""
    problems = []
    cases = {"nasty": nasty_report(), "failed": reports.failed("boom \x1b[1m\udcff", "s.zip"),
             "rejected": reports.rejected(submission.Rejected("bad\nname\x00").args[0], "s.zip")}
    for name, report in cases.items():
        out = outputs(base, name)
        try:
            reports.write_all(report, argparse.Namespace(**out))
            _, doc, root, found = parsed(out)
        except Exception as e:   # noqa: B902 -- any failure to write or parse is the finding
            problems.append(f"{name}: {type(e).__name__}: {e}")
            continue
        found += scoreboard_problems(report)
        if name == "nasty":
            if "not a finite number" not in doc["output"]:
                found.append("results.json does not say that NaN became 0")
            if "leaderboard" in doc:
                found.append("a NaN time on the leaderboard")
            if "\\x1b" not in ET.tostring(root, encoding="unicode"):
                found.append("the escape code is not shown as \\x1b in the JUnit XML")
        elif root.get("failures") != "1" or not root.findall(".//failure"):
            found.append("the JUnit XML does not record the failure")
        problems += [f"{name}: {p}" for p in found]
    return problems


def check_grade(base):
    """`workbook grade` on a bomb (rejected before anything is built: no GPU
    needed) under a strict UTF-8 locale, and grader.grade when grading
    raises: every report is written, and says why."""
    out = outputs(base, "grade-bomb")
    args = sum(([f"--{kind}", path] for kind, path in out.items()), [])
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "grading", "workbook.py"), "grade",
                           "--submission", os.path.join(base, "bomb-bzip2-inside.tar.gz")] + args,
                          env=dict(os.environ, **LOCALES[0]), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    problems = []
    try:
        report, doc, _, problems = parsed(out)
        if "64 MiB" not in report["rejected"] or "64 MiB" not in doc["output"]:
            problems.append(f"the bomb is not rejected for its size: {report['rejected']}")
    except Exception as e:   # noqa: B902
        problems.append(f"{type(e).__name__}: {e}; the grader said "
                        + proc.stdout.decode("utf-8", "replace")[-500:])

    from grader import grade as grader   # the grader's whole import chain only for this check
    out = outputs(base, "grade-raises")
    args = sum(([f"--{kind}", path] for kind, path in out.items()), [])
    parser = argparse.ArgumentParser()
    grader.add_grade_options(parser)
    saved = grader.grade_submission
    grader.grade_submission = lambda args, phases: 1 / 0
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            grader.grade(parser.parse_args(args))
        report, doc, _, found = parsed(out)
        problems += found
        if not report["rejected"].startswith(reports.FAILED + "ZeroDivisionError"):
            problems.append(f"a grade that raised: {report['rejected']}")
    except Exception as e:   # noqa: B902
        problems.append(f"a grade that raised: {type(e).__name__}: {e}")
    finally:
        grader.grade_submission = saved
    return [f"grade: {p}" for p in problems]


def main():
    if sys.argv[1:2] == ["--read"]:
        read_each(sys.argv[2:])
        return 0
    base = tempfile.mkdtemp(prefix="wbinputs-")
    try:
        start = time.monotonic()
        problems, slowest = check_archives(base)
        problems += (whole_copy_problems(base) + include_check_problems() + check_reports(base)
                     + check_grade(base))
        print(f"slowest read {slowest:.3f} s (limit {TIME_LIMIT} s); "
              f"the whole test {time.monotonic() - start:.1f} s")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if problems:
        print("FAILED:\n  " + "\n  ".join(problems))
        return 1
    print("inputs and reports: all right")
    return 0


if __name__ == "__main__":
    sys.exit(main())

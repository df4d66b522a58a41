"""What device code a compiled kernels.cu.o holds: the kernels (entry
functions) of each ELF image in its fatbinary (.nv_fatbin), read by the
grader from the file, without running anything of the submission."""
import os
import re
import struct
import subprocess
import tempfile

FATBIN_MAGIC = 0xBA55ED50
KIND_ELF = 2
STO_CUDA_ENTRY = 0x10   # st_other bit of a kernel (an entry function) in a CUDA ELF


def _section(obj, name):
    """The bytes of one section of a host object (objcopy into a file of
    its own: objcopy replaces its output file, so it cannot write to a
    pipe), or b''."""
    with tempfile.TemporaryDirectory(prefix="wbdevicecode-") as folder:
        out = os.path.join(folder, "section.bin")
        proc = subprocess.run(["objcopy", "-O", "binary", f"--only-section={name}", obj, out],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if proc.returncode != 0 or not os.path.isfile(out):
            return b""
        with open(out, "rb") as f:
            return f.read()


def _images(blob):
    """(kind, payload) of every entry of the fatbinaries in blob."""
    at = 0
    while at + 16 <= len(blob):
        magic, _version, header, size = struct.unpack_from("<IHHQ", blob, at)
        if magic != FATBIN_MAGIC:
            break
        entry, end = at + header, at + header + size
        while entry + 16 <= end:
            kind, _v, entry_header, payload = struct.unpack_from("<HHIQ", blob, entry)
            yield kind, blob[entry + entry_header:entry + entry_header + payload]
            entry += entry_header + payload
        at = end


def _elf_kernels(elf):
    """Names of the entry functions in a CUDA ELF image (64-bit)."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        return None   # compressed or not an ELF: cannot tell
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    for _name, sh_type, _f, _a, offset, size, link, _i, _al, entsize in sections:
        if sh_type != 2 or not entsize:   # SHT_SYMTAB
            continue
        strtab = sections[link]
        for k in range(size // entsize):
            st_name, st_info, st_other = struct.unpack_from("<IBB", elf, offset + k * entsize)
            if st_info & 0xF == 2 and st_other & STO_CUDA_ENTRY:   # STT_FUNC, an entry
                start = strtab[4] + st_name
                names.add(elf[start:elf.index(b"\0", start)].decode("ascii", "replace"))
    return names


def kernels(obj):
    """The kernels whose device code the object holds (mangled names), or
    None when that cannot be read (a compressed image)."""
    found = set()
    for kind, payload in _images(_section(obj, ".nv_fatbin")):
        if kind == KIND_ELF:
            names = _elf_kernels(payload)
            if names is None:
                return None
            found |= names
    return found


def _base_name(demangled):
    """'void scale<256>(float*, int)' -> 'scale'; 'ns::f(int)' -> 'f'."""
    head = demangled.split("(", 1)[0]
    depth, out = 0, ""
    for c in head:   # drop template arguments
        depth += c == "<"
        if depth == 0:
            out += c
        depth -= c == ">"
    return out.split()[-1].split("::")[-1] if out.split() else out


def given_kernel_names(header_text):
    """Names of the kernels a lab's given.cuh DEFINES (a body follows), as
    opposed to declaring them for the student to write."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", header_text, flags=re.S)
    text = re.sub(r"__launch_bounds__\s*\([^)]*\)", " ", text)
    return {m.group(1) for m in re.finditer(
        r"__global__[^;{(]*?\b(\w+)\s*\([^;{]*\)\s*\{", text)}


def own_kernels(obj, given_names):
    """The kernels in the object that the lab's given code does not define,
    by their demangled names; None when the device code cannot be read."""
    names = kernels(obj)
    if names is None:
        return None
    proc = subprocess.run(["c++filt"], input="\n".join(sorted(names)), stdout=subprocess.PIPE,
                          text=True)
    demangled = proc.stdout.splitlines() if proc.returncode == 0 else sorted(names)
    return sorted(d for d in demangled if _base_name(d) not in given_names)


def lab_kernels(student_obj, reference_obj, given_header):
    """{"student": ..., "reference": ...}: each object's own kernels (not the
    lab's given ones, from given_header when the lab has one), None where
    the device code cannot be read."""
    given = set()
    if os.path.isfile(given_header):
        with open(given_header, encoding="utf-8", errors="replace") as f:
            given = given_kernel_names(f.read())
    return {"student": own_kernels(student_obj, given),
            "reference": own_kernels(reference_obj, given)}

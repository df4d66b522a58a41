"""Reading a submission's folder or archive under limits. Nothing an
archive says about itself is trusted: bytes are counted as they are
decompressed, a chunk at a time, and reading stops as soon as a limit is
passed, so a bomb (a terabyte claimed in a few hundred KB, a zip member that
understates its size) costs a fraction of a second. Every problem is a
Rejected with one line (submission.py says what a submission is)."""
import bz2
import gzip
import io
import lzma
import os
import stat
import struct
import tarfile
import zipfile
import zlib

MAX_FILE_BYTES = 1 << 20       # one student file
MAX_ARCHIVE_BYTES = 64 << 20   # an archive file, and all that a tar decompresses to
MAX_MEMBERS = 10000            # files and folders in a submission, ignored ones included
TOO_MANY = (f"more than {MAX_MEMBERS} files and folders in the submission (leave build "
            "folders and .git out of it)")
CHUNK = 64 << 10
# A tar is recognised by what compresses it, from its first bytes: a name
# (.tar.gz) may lie, and tarfile's own detection decompresses without bound.
COMPRESSORS = ((b"\x1f\x8b", gzip.open), (b"BZh", bz2.open), (b"\xfd7zXZ\x00", lzma.open))
ZIP_STARTS = (b"PK\x03\x04", b"PK\x05\x06")   # a first member, or an empty zip



class Rejected(Exception):
    """The submission is refused as a whole; str() is one line for the report."""

    def __init__(self, reason):
        super().__init__(printable(reason)[:500])


def printable(name):
    """name on one printable line: control characters (a newline in a file
    name) and the surrogates that stand for bytes that are not UTF-8 become
    escapes such as \\n or \\udcff, which any terminal or report can write."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def _read_limited(stream, name):
    """All of stream, a chunk at a time, stopping once it passes MAX_FILE_BYTES
    whatever size the archive claims."""
    data = bytearray()
    while chunk := stream.read(CHUNK):
        data += chunk
        if len(data) > MAX_FILE_BYTES:
            raise Rejected(f"{name} is larger than {MAX_FILE_BYTES} bytes")
    return bytes(data)


# ------------------------------------------------------------------ folder
def folder_entries(path):
    for top, dirs, files in os.walk(path):
        for name in dirs + files:
            full = os.path.join(top, name)
            rel = os.path.relpath(full, path)
            mode = os.lstat(full).st_mode
            if stat.S_ISLNK(mode):
                raise Rejected(f"symbolic link in the submission: {rel}")
            if stat.S_ISDIR(mode):
                yield rel, None
            elif stat.S_ISREG(mode):
                yield rel, lambda full=full, rel=rel: _read_path(full, rel)
            else:
                raise Rejected(f"special file in the submission: {rel}")


def _read_path(full, rel):
    with open(full, "rb") as f:
        return _read_limited(f, rel)


# --------------------------------------------------------------------- zip
def zip_entries(path):
    with open(path, "rb") as f:
        data = f.read()   # at most MAX_ARCHIVE_BYTES
    # zipfile builds an object per entry of the central directory before we
    # see any (a few MB of entries take seconds); every entry starts with this
    # signature, so counting them first bounds that work.
    if data.count(b"PK\x01\x02") > MAX_MEMBERS:
        raise Rejected(TOO_MANY)
    archive = zipfile.ZipFile(io.BytesIO(data))
    for info in archive.infolist():
        if stat.S_ISLNK(info.external_attr >> 16):
            raise Rejected(f"symbolic link in the submission: {info.filename}")
        if info.is_dir():
            yield info.filename, None
        else:
            yield info.filename, lambda info=info: _zip_member(archive, data, info)


def _zip_member(archive, data, info):
    if info.flag_bits & 0x1:
        raise Rejected(f"{info.filename} is encrypted in the zip")
    if info.compress_type not in (zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        # Stored or deflated: zipfile decompresses no more than each read asks
        # for, and checks the CRC at the end.
        with archive.open(info) as member:
            return _read_limited(member, info.filename)
    # zipfile hands bzip2 and lzma data to a decompressor that returns all it
    # can at once (a few KB of bzip2 make gigabytes): decompress them here.
    raw = _zip_raw(data, info)
    if info.compress_type == zipfile.ZIP_BZIP2:
        out = _decompress(bz2.BZ2Decompressor(), raw, info.filename)
    else:
        out = _decompress(*_zip_lzma(raw, info.filename), info.filename)
    if zlib.crc32(out) != info.CRC:
        raise Rejected(f"bad CRC for {info.filename} in the zip (corrupt or truncated)")
    return out


def _zip_raw(data, info):
    """The compressed bytes of a member: after its local header (30 bytes,
    then the name and the extra field, whose lengths end the header)."""
    start = info.header_offset
    header = data[start:start + 30]
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise Rejected(f"{info.filename}: no local header where the zip's directory says")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    start += 30 + name_len + extra_len
    return data[start:start + info.compress_size]


def _zip_lzma(raw, name):
    """(decompressor, stream) of a zip lzma member: a 2-byte version, the
    2-byte length of the properties, 5 bytes of properties (lc, lp and pb in
    one byte, then the dictionary size), then a raw LZMA1 stream."""
    (length,) = struct.unpack("<H", raw[2:4])
    props = raw[4:4 + length]
    if length != 5 or len(props) != 5:
        raise Rejected(f"{name}: not an lzma member the grader can read")
    filters = [{"id": lzma.FILTER_LZMA1, "dict_size": int.from_bytes(props[1:], "little"),
                "lc": props[0] % 9, "lp": props[0] // 9 % 5, "pb": props[0] // 45}]
    return lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=filters), raw[4 + length:]


def _decompress(decompressor, raw, name):
    """raw through a bz2 or lzma decompressor object, asking each step for no
    more than MAX_FILE_BYTES + 1 in all, so a bomb stops there."""
    out = bytearray()
    while not decompressor.eof:
        out += decompressor.decompress(raw, MAX_FILE_BYTES + 1 - len(out))
        raw = b""
        if len(out) > MAX_FILE_BYTES:
            raise Rejected(f"{name} is larger than {MAX_FILE_BYTES} bytes")
        if decompressor.needs_input:   # the data ended (if too soon, the CRC says so)
            break
    return bytes(out)


# --------------------------------------------------------------------- tar
class _Capped:
    """A stream that gives at most MAX_ARCHIVE_BYTES in all: a tar is read
    through it, so no size that a header claims, and no member that is
    skipped, can make the decompressor produce more."""

    def __init__(self, stream):
        self.stream, self.left = stream, MAX_ARCHIVE_BYTES

    def read(self, size=-1):
        size = self.left + 1 if size is None or size < 0 else min(size, self.left + 1)
        data = self.stream.read(size)
        self.left -= len(data)
        if self.left < 0:
            raise Rejected(f"the archive holds more than {MAX_ARCHIVE_BYTES >> 20} MiB "
                           "once decompressed (leave build folders and .git out of it)")
        return data


def tar_entries(path, head):
    with open(path, "rb") as raw:
        opener = next((o for magic, o in COMPRESSORS if head.startswith(magic)), None)
        stream = _Capped(opener(raw) if opener else raw)
        # "r|": one pass, member by member, through the capped stream (the
        # random-access modes scan the whole archive first). Names are decoded
        # as UTF-8 whatever the locale, and an undecodable one is an error.
        archive = tarfile.open(fileobj=stream, mode="r|", encoding="utf-8", errors="strict")
        for member in archive:
            if member.issym() or member.islnk():
                raise Rejected(f"link in the submission: {member.name}")
            if member.isfile():
                yield member.name, lambda m=member: _read_limited(archive.extractfile(m), m.name)
            elif member.isdir():
                yield member.name, None
            else:
                raise Rejected(f"special file in the submission: {member.name}")
        # Read to the end, so that the compressor checks its CRC and a corrupt
        # or truncated archive is noticed.
        while stream.read(CHUNK):
            pass

"""`watch`: rebuilds and re-tests a lab each time one of its files is saved.

Saves are seen through inotify where the file system delivers its events,
and by polling the files' times where it does not: on a network or FUSE file
system (NFS, SMB, sshfs, a VM's shared folder) inotify hears only this
machine's writes, and an editor on another machine would go unnoticed.
"""
import ctypes
import ctypes.util
import os
import select
import struct
import time
from pathlib import Path

from shared import criterion
from shared import labs
from . import builddir
from . import buildmessages
from . import progress
from . import status
from . import testruns
from . import ui
from .ui import Style, lab_or_exit, show_compiler_messages

SOURCES = (".cu", ".h", ".c")
# File systems whose inotify events may not come (changes made elsewhere).
REMOTE = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "fuse", "vboxsf", "virtiofs", "afs",
          "ceph", "glusterfs", "lustre", "gpfs", "beegfs", "davfs")


def file_system(path):
    """The type of the file system holding path ("ext4", "nfs4", "fuse.sshfs")."""
    best, kind = "", "?"
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return kind
    real = os.path.realpath(path)
    for line in mounts:
        fields = line.split()
        point = fields[1].replace("\\040", " ")
        if (real == point or real.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind


def snapshot(folder):
    """{name: (mtime, size)} of the folder's files."""
    found = {}
    for entry in os.scandir(folder):
        if entry.is_file():
            info = entry.stat()
            found[entry.name] = (info.st_mtime_ns, info.st_size)
    return found


def wanted(name):
    return name.endswith(SOURCES) and not name.startswith(".")


class Poller:
    """Compares the files' times and sizes every `interval` seconds."""

    def __init__(self, folder, interval=1.0):
        self.folder, self.interval = folder, interval
        self.seen = snapshot(folder)

    def changes(self):
        now = snapshot(self.folder)
        changed = {n for n in now if now[n] != self.seen.get(n)}
        self.seen = now
        return {n for n in changed if wanted(n)}

    def wait(self):
        """The names of the source files that changed, once the folder has
        been quiet for an interval (an editor's write-rename counts once)."""
        names = set()
        while True:
            time.sleep(self.interval)
            new = self.changes()
            if names and not new:
                return names
            names |= new


class Inotify:
    """The Linux inotify C API through ctypes: blocks in select() until a file
    in the folder is written or replaced. Every `check` seconds without an
    event it compares the files' times too: a change that came without an
    event means the events do not arrive here, and it switches to polling."""
    CLOSE_WRITE, MOVED_TO, CREATE = 0x8, 0x80, 0x100

    def __init__(self, folder, check=2.0):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.fd = libc.inotify_init1(os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        if libc.inotify_add_watch(self.fd, str(folder).encode(),
                                  self.CLOSE_WRITE | self.MOVED_TO | self.CREATE) < 0:
            raise OSError(ctypes.get_errno(), f"cannot watch {folder}")
        self.poller, self.check, self.polling = Poller(folder), check, False

    def wait(self):
        if self.polling:
            return self.poller.wait()
        names, timeout = set(), self.check
        while True:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready and names:
                self.poller.changes()   # what inotify reported is now the baseline
                return {n for n in names if wanted(n)}
            if not ready:
                missed = self.poller.changes()
                if missed and select.select([self.fd], [], [], 0.5)[0]:
                    continue   # the event was on its way: read it
                if missed:
                    print(Style.yellow("(inotify did not report that change: this file system "
                                       "does not deliver its events here, so watch now polls "
                                       "every second)"))
                    self.polling = True
                    return missed
                continue
            data = os.read(self.fd, 65536)
            offset = 0
            while offset < len(data):
                _, _, _, length = struct.unpack_from("iIII", data, offset)
                name = data[offset + 16: offset + 16 + length].rstrip(b"\0").decode()
                offset += 16 + length
                if name and not name.startswith(".") and not name.endswith("~"):
                    names.add(name)
            timeout = 0.2 if names else self.check


def timing_tables(output):
    """The results tables a test run printed (blocks of lines with '|')."""
    blocks, current = [], []
    for line in output.splitlines():
        rule = current and line.strip() and set(line.strip()) <= set("-+")   # ---+--- under a header
        if ("|" in line and not line.startswith("[")) or rule:
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return "\n\n".join("\n".join(b) for b in blocks)


def report_once(folder, name, first_round=False):
    """One build-and-test round as watch shows it: the lab's stages, then
    the failure of the lowest stage that fails (or the timing tables once
    everything passes); a build's messages instead when it does not compile.
    The first round adds one line for the other labs."""
    built, report, output = testruns.run_lab_tests(name)
    if not built:
        print(Style.red("does not compile:"))
        show_compiler_messages(output, folder)
        return False
    if report is None:
        print(Style.red("the test program crashed:"))
        print(output[-1500:])
        return False
    states = progress.stage_states(folder, name, within=20)
    print("\n".join(status.stage_rows(name, states, len(name), details=False)))
    if first_round:
        others = {n: progress.stage_states(f, n, within=20) for f, n in labs.all_labs() if n != name}
        status.say(status.others_line(others), Style.dim)
    if report["skipped"] and not (report["passed"] or report["failed"] or report["errored"]):
        status.say("compiles; GPU tests not run: "
                   f"{progress.skip_reason(criterion.all_tests(report))}", Style.yellow)
        return True
    test, suite = progress.lowest_failure(report)
    if test:
        bad = report["failed"] + report["errored"]
        print(Style.red(f"✘ {suite}::{test['name']} ({bad} failing)"))
        for message in test.get("messages") or [test["status"].lower()]:
            print("\n".join(fitted for line in message.splitlines()
                            for fitted in ui.fit(buildmessages.rewrite(line))))
        return False
    print(Style.green(f"✔ all {report['passed']} tests pass"))
    tables = timing_tables(output)
    if tables:
        print(tables)
    return True


def next_lab_to_work_on():
    for folder, name in labs.all_labs():
        if any(state in ("not started", "not run", "failing")
               for _, _, state, _ in progress.stage_states(folder, name, within=100)):
            return name
    return labs.all_labs()[0][1]


def watch(args):
    name = lab_or_exit(args.lab)[1] if args.lab else next_lab_to_work_on()
    folder = Path(labs.ROOT) / "labs" / lab_or_exit(name)[0]
    builddir.configure()
    builddir.add_labs([name])
    kind = file_system(folder)
    poll = args.poll or kind.split(".")[0] in REMOTE
    how = (f"polling every {args.interval:g} s" + ("" if args.poll else f": {kind} file system")
           if poll else "inotify")
    print(Style.bold(f"Watching labs/{folder.name}/ ({how}; Ctrl-C to stop)."))
    try:
        notifier = Poller(folder, args.interval) if poll else Inotify(folder)
        report_once(folder.name, name, first_round=True)
        while True:
            changed = {n for n in notifier.wait() if (folder / n).exists()}
            if changed:
                print(Style.dim(f"\n── {', '.join(sorted(changed))} changed: rebuilding ──"))
                report_once(folder.name, name)
                if args.once:
                    return 0
    except KeyboardInterrupt:
        print("\nStopped watching.")
    return 0


def add_command(sub):
    w = sub.add_parser("watch", help="rebuild and re-test a lab each time one of its files is saved",
                       description="Rebuilds and re-tests a lab each time one of its files is "
                       "saved: the lab's stages and the failure of the lowest stage that fails, the "
                       "timing tables once every test passes. "
                       "Uses inotify, and polls where its events do not arrive (network and FUSE "
                       "file systems).")
    w.add_argument("lab", nargs="?", help="the lab (default: the first one not yet passing)")
    w.add_argument("--poll", action="store_true",
                   help="poll the files' times instead of using inotify (for a file system "
                        "edited from another machine)")
    w.add_argument("--interval", type=float, default=1.0, metavar="S",
                   help="seconds between polls (default 1)")
    w.add_argument("--once", action="store_true", help="stop after the first change (for scripts)")
    w.set_defaults(func=watch)

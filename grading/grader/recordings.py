"""What the messages on the grader's channel (channel.py) do: the test
cases and their recordings, the seeds, and the grader's clock.

- hello ('H'): the first one names the test runner (Criterion's main).
- begin ('B', label suite.test): opens that test's next case k, bound to
  the sending process, when that process is a child of the runner that
  never began a case before (a Criterion worker; not a child of a worker,
  not a worker begun twice), and the label is the test being run (any test
  when the grader runs them all). It seals the case
  still open. The grader answers one byte, whether it took the case or not.
- observation, error ('O', 'E'): appended to the open case's recording,
  <suite>.<test>.<k> in the grader's folder, as the judge reads it.
- finish ('F'): appended, and the case is sealed: nothing more is taken
  for it, from anyone.
- the grader's clock, per timed repetition: ready ('R': repetition, calls)
  gets a fresh 64-bit seed (or, for the judge's run, the seed the
  submission's run of the same case got in the same place); set ('S') gets
  "go", and the grader stamps t0 with its monotonic clock; done ('D')
  stamps t1. Repetition 0 starts a new timing series; label ('L') names
  the series that just ended.

Messages from any other process are dropped (channel.py). The recordings
hold RECORD_BYTES at most: past it a case's recording is cut and sealed,
and the case fails as unfinished.
"""
import os
import re
import secrets
import statistics
import struct
import time

RECORD_BYTES = 2 << 30          # the most a run's recordings may hold
HEAD = struct.Struct("<cI")     # kind, label length
DATA_LEN = struct.Struct("<Q")
READY = struct.Struct("<ii")         # repetition, calls
SEED = struct.Struct("<Q")
CASE_NAME = re.compile(r"[A-Za-z0-9_]+\.[A-Za-z0-9_]+")


class Series:
    """One time_submissions call: the grader's time of each repetition."""

    def __init__(self, calls):
        self.label = None
        self.calls = calls
        self.times_ns = []
        self.started_ns = None
        self.expect = b"R"     # the hand-shake's next message: R, then S, then D, then R again
        self.broken = None     # why the hand-shake went out of order, if it did

    def step(self, kind):
        """Takes the hand-shake's next message; False (and the series
        broken for good) when it is not the one due: a 'done' sent early
        by code other than the test's is followed by the test's own, and
        that second 'done' breaks the series."""
        if self.broken is None and kind != self.expect:
            self.broken = (f"'{kind.decode()}' where '{self.expect.decode()}' was due, after "
                           f"{len(self.times_ns)} timed repetition(s)")
        self.expect = {b"R": b"S", b"S": b"D", b"D": b"R"}[kind]
        return self.broken is None

    def ms_per_call(self, calls=None):
        """Median over repetitions of (t1 - t0) / calls, in ms; calls
        defaults to the count the process gave."""
        if not self.times_ns:
            return None
        return statistics.median(self.times_ns) / (calls or self.calls) / 1e6


class Case:
    def __init__(self, name, k, pid):
        self.name, self.k, self.pid = name, k, pid
        self.series = []
        self.seeds = []
        self.sealed = False
        self.file = None


def _parent_of(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("PPid:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


class Recordings:
    """The message handling of channel.Channel, which provides the open
    connections (each with its process id and case) and sets up cases,
    runner, begun, left (the bytes the recordings may still hold), _open
    (the case being recorded), case_name, record_dir and seeds_to_send."""

    def _entry(self, connection, message):
        if len(message) < HEAD.size:
            return
        kind, label_len = HEAD.unpack_from(message)
        at = HEAD.size + label_len
        if len(message) < at + DATA_LEN.size:
            return
        label = bytes(message[HEAD.size:at]).decode("utf-8", "replace")
        data_len = DATA_LEN.unpack_from(message, at)[0]
        data = message[at + DATA_LEN.size:]
        connection.data_left = max(data_len - len(data), 0)
        connection.keep = False
        connection.kind = kind
        case = connection.case if connection.case is self._open else None
        if kind == b"H":
            if self.runner is None:
                self.runner = connection.pid
        elif kind == b"B":
            self._begin(connection, label)
            self._answer(connection, b"k")
        elif case is None or case.sealed:
            # Not heard; a question still gets its answer (nothing is timed
            # or kept), so that no process waits on the grader for ever.
            if kind == b"R":
                self._answer(connection, SEED.pack(secrets.randbits(64)))
            elif kind == b"S":
                self._answer(connection, b"g")
        elif kind in (b"O", b"E", b"F"):
            connection.keep = True
            self._write(case, message)
            if kind == b"F" and not connection.data_left:
                self._seal(case)
        elif kind == b"R" and len(data) == READY.size:
            repetition, calls = READY.unpack(data)
            if repetition == 0 or not case.series:
                case.series.append(Series(max(calls, 1)))
            case.series[-1].step(kind)
            self._answer(connection, SEED.pack(self._seed(case)))
        elif kind == b"S" and case.series:
            series = case.series[-1]
            series.started_ns = time.monotonic_ns() if series.step(kind) else None
            self._answer(connection, b"g")
        elif kind == b"D" and case.series:
            series = case.series[-1]
            if series.step(kind) and series.started_ns is not None:
                series.times_ns.append(time.monotonic_ns() - series.started_ns)
            series.started_ns = None
        elif kind == b"L" and case.series and case.series[-1].label is None:
            case.series[-1].label = label      # the series that just ended

    def _continue_entry(self, connection, data):
        connection.data_left = max(connection.data_left - len(data), 0)
        case = connection.case
        if connection.keep and case is not None and case is self._open and not case.sealed:
            self._write(case, data)
            if not connection.data_left and connection.kind == b"F":
                self._seal(case)

    def _begin(self, connection, label):
        """Opens case k for connection when its process may begin one."""
        pid = connection.pid
        if (label != (self.case_name or label) or not CASE_NAME.fullmatch(label)
                or connection.case is not None or pid in self.begun
                or self.runner is None or pid == self.runner or _parent_of(pid) != self.runner):
            return
        self.begun.add(pid)
        self._seal(self._open)
        case = Case(label, sum(c.name == label for c in self.cases), pid)
        if self.record_dir:
            case.file = open(os.path.join(self.record_dir, f"{label}.{case.k}"), "wb")
        self.cases.append(case)
        connection.case = self._open = case

    def _write(self, case, data):
        if not case.file:
            return
        if len(data) > self.left:
            case.file.write(data[:self.left])
            self.left = 0
            self._seal(case)
            return
        self.left -= len(data)
        case.file.write(data)

    def _seed(self, case):
        given = self.seeds_to_send.get((case.name, case.k), [])
        seed = given[len(case.seeds)] if len(case.seeds) < len(given) else secrets.randbits(64)
        case.seeds.append(seed)
        return seed

    def _seal(self, case):
        if case is None or case.sealed:
            return
        case.sealed = True
        if case.file:
            case.file.close()
        if self._open is case:
            self._open = None

    @staticmethod
    def _answer(connection, data):
        try:
            connection.sock.send(data)
        except OSError:
            pass

    def seeds(self):
        """{(name, k): the seeds sent to case k of test name}, for the judge's
        run of the same cases."""
        return {(case.name, case.k): list(case.seeds) for case in self.cases}

    def case(self, name, k):
        return next((c for c in self.cases if c.name == name and c.k == k), None)

#!/usr/bin/env python3
"""The grader's channel (grading/grader/channel.py) against a peer process that
speaks it without a GPU (channel_peer.c), in the sandbox the record run uses:
an honest peer's recording, seeds and times; the same seeds replayed for the
judge's run; a 'done' sent early breaks its series; entries after a case's finish (same connection, atexit, a
child) dropped; a flood cut at the size cap; a silent peer bounded by the
wall limit. Prints the hand-shake's own cost (a repetition with no work).

usage: test_channel.py CHANNEL_PEER_BINARY
"""
import os
import struct
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "grading"))
from grader import channel  # noqa: E402
from grader import sandbox  # noqa: E402


def entries(path):
    """[(kind, label, data)] of a recording the grader wrote."""
    with open(path, "rb") as f:
        data = f.read()
    out, at = [], 0
    while at + 5 <= len(data):
        kind, label_len = struct.unpack_from("<cI", data, at)
        at += 5
        label = data[at:at + label_len].decode()
        at += label_len
        (size,) = struct.unpack_from("<Q", data, at)
        at += 8
        out.append((kind.decode(), label, data[at:at + size]))
        at += size
    return out


def run_peer(peer, tmp, args, wall_s=30, seeds=None, cap=channel.RECORD_BYTES):
    """Runs the peer in a record run's sandbox; returns (sandbox.run's dict,
    the closed channel, the recording folder)."""
    work = tempfile.mkdtemp(dir=tmp)
    record, listening = os.path.join(work, "record"), os.path.join(work, "listen")
    os.makedirs(record)
    os.makedirs(listening)
    heard = channel.Channel(listening, "peer.case", record_dir=record, seeds=seeds, cap=cap)
    try:
        view = sandbox.view_args(ro=[peer, listening], chdir="/tmp")
        run = sandbox.run([peer, *args], cwd=work, env=sandbox.minimal_env(WB_CHANNEL=heard.path),
                          wall_s=wall_s, sandbox=view)
    finally:
        heard.close()
    return run, heard, record


def honest_problems(peer, tmp):
    problems = []
    run, heard, record = run_peer(peer, tmp, ["honest", "20", "2", "2000"])
    if run["status"] != 0 or len(heard.cases) != 1:
        return [f"honest peer: exit {run['status']}, {len(heard.cases)} case(s): {run['output'][-300:]}"]
    case = heard.cases[0]
    got = entries(os.path.join(record, "peer.case.0"))
    kinds = [e[0] for e in got]
    if kinds != ["O", "F"]:
        problems.append(f"honest peer: recording holds {kinds}, not the observation and the finish")
    sent = list(struct.unpack(f"<{len(case.seeds)}Q", got[0][2])) if kinds[:1] == ["O"] else []
    if sent != case.seeds or len(set(sent)) != 20:
        problems.append("honest peer: the seeds it got are not the 20 fresh ones the grader sent")
    series = case.series
    if len(series) != 1 or series[0].label != "peer series" or len(series[0].times_ns) != 20:
        problems.append(f"honest peer: timing series {[(s.label, len(s.times_ns)) for s in series]}")
    else:
        ms = series[0].ms_per_call()
        # 2 ms of work over 2 calls, plus the hand-shake: never less than the
        # work; more on a loaded machine (CI's), where the grader waits for a CPU.
        if not 1.0 <= ms < 10.0:
            problems.append(f"honest peer: the grader timed {ms:.4f} ms per call, not 1 to 10")
    # The judge's run of the same case gets the same seeds in the same order.
    _, again, _ = run_peer(peer, tmp, ["honest", "20", "2", "0"], seeds=heard.seeds())
    if not again.cases or again.cases[0].seeds != case.seeds:
        problems.append("judge's run: the seeds differ from the record run's")
    return problems


def early_done_problems(peer, tmp):
    """A 'done' sent at once after 'go' (by code other than the test's,
    which holds the same connection), then the test's own after the work:
    the series is broken, and the grader scores none of its times."""
    _, heard, _ = run_peer(peer, tmp, ["early", "5", "2000"])
    series = [s for c in heard.cases for s in c.series]
    if len(series) != 1 or not series[0].broken:
        return [f"early done: series {[(s.label, len(s.times_ns), s.broken) for s in series]} "
                "not marked broken"]
    return []


def late_problems(peer, tmp):
    run, heard, record = run_peer(peer, tmp, ["late"])
    names = sorted(os.listdir(record))
    if names != ["peer.case.0"] or len(heard.cases) != 1:
        return [f"late writes: recordings {names}, cases {len(heard.cases)}: {run['output'][-300:]}"]
    got = entries(os.path.join(record, "peer.case.0"))
    if [(e[0], e[2]) for e in got] != [("O", struct.pack("<i", 41)), ("F", struct.pack("<Q", 1))]:
        return [f"late writes: the recording changed after its finish: {got}"]
    return []


def flood_problems(peer, tmp):
    cap = 8 << 20
    start = time.monotonic()
    run, heard, record = run_peer(peer, tmp, ["flood"], wall_s=5, cap=cap)
    size = sum(os.path.getsize(os.path.join(record, n)) for n in os.listdir(record))
    problems = []
    if size > cap:
        problems.append(f"flood: {size} bytes recorded, more than the cap {cap}")
    if not heard.cases or not heard.cases[0].sealed:
        problems.append("flood: the case was not sealed at the cap")
    if time.monotonic() - start > 30:
        problems.append(f"flood: took {time.monotonic() - start:.0f} s, past its wall limit")
    return problems


def silent_problems(peer, tmp):
    start = time.monotonic()
    run, heard, record = run_peer(peer, tmp, ["silent"], wall_s=2)
    problems = []
    if run["status"] is not None or time.monotonic() - start > 20:
        problems.append(f"silent peer: status {run['status']} after {time.monotonic() - start:.0f} s")
    if [e[0] for e in entries(os.path.join(record, "peer.case.0"))]:
        problems.append("silent peer: its recording is not empty")
    return problems


def handshake_cost(peer, tmp):
    """The grader's time of a repetition with no work: what the hand-shake adds."""
    _, heard, _ = run_peer(peer, tmp, ["honest", "2000", "1", "0"])
    return heard.cases[0].series[0].ms_per_call() * 1000.0


def main():
    if len(sys.argv) != 2 or sys.argv[1] == "--help":
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    ok, why = sandbox.available()
    if not ok:
        print(f"skipped: no sandbox ({why})")
        return 77
    peer = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="wbch-", dir="/tmp") as tmp:
        problems = (honest_problems(peer, tmp) + early_done_problems(peer, tmp) + late_problems(peer, tmp)
                    + flood_problems(peer, tmp) + silent_problems(peer, tmp))
        print(f"hand-shake cost: {handshake_cost(peer, tmp):.1f} us per repetition (median of 2000)")
    for p in problems:
        print("PROBLEM:", p)
    print("all channel checks right" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

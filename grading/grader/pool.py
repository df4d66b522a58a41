"""Work spread over slots that run side by side: one thread per slot, each
taking the next item as soon as it is free, so the items start in their
order. A batch's submissions over its GPUs (batch.py), a grade's lab builds
and correctness tests (grade.py, testplan.py). The work itself runs in
processes (a grade, a compile, a test in its sandbox), so threads are enough."""
import os
import queue
import threading
import time

# Test processes on one GPU at a time, at most: more no longer shortens a
# grade (the GPU is shared) and makes each test's wall-clock limit tighter.
MAX_JOBS = 8
# How long a stopped run waits for its running items to end.
STOP_WAIT_S = 10


def cores():
    """The CPU cores this process may use (a Slurm task's share, not the machine's)."""
    return len(os.sched_getaffinity(0))


def default_jobs(grades=1, per_gpu=1):
    """How many builds and correctness tests a grade runs at a time: the
    cores shared by the `grades` that run at once (a batch's), and MAX_JOBS
    test processes per GPU shared by the `per_gpu` grades on each; at least one."""
    return max(1, min(MAX_JOBS // max(1, per_gpu), cores() // max(1, grades)))


def run(items, slots, work):
    """Calls work(item, slot) for every item; slots: one per thread (a
    batch's: the GPU each grades on). Returns when every item is done. The
    first exception that work raises is raised here once the running items
    are over; no item starts after it, nor after the caller was stopped (a
    signal's exception while it waits, raised here after at most
    STOP_WAIT_S). One slot: the items one after the
    other in the caller's thread, exactly as a loop would."""
    slots = list(slots)
    if len(slots) == 1:
        for item in items:
            work(item, slots[0])
        return
    todo = queue.SimpleQueue()
    for item in items:
        todo.put(item)
    failures, stop = [], threading.Event()

    def worker(slot):
        while not stop.is_set():
            try:
                item = todo.get_nowait()
            except queue.Empty:
                return
            try:
                work(item, slot)
            except BaseException as e:   # raised in the caller's thread, below
                failures.append(e)
                stop.set()

    # Daemon threads: a grade stopped by a signal exits without waiting for
    # the tests that are running (their sandboxes die with the process).
    threads = [threading.Thread(target=worker, args=(slot,), daemon=True) for slot in slots]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except BaseException:
        # Stopped (a signal's exception): no item starts now, and the running
        # ones, whose processes were ended (sandbox.stop_all), get a moment
        # to clean up after themselves (their temporary folders).
        stop.set()
        deadline = time.monotonic() + STOP_WAIT_S
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        raise
    if failures:
        raise failures[0]

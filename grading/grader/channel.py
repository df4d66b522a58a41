"""The grader's end of the channel to a test process (common/wb_channel.h).

The grader listens on a Unix socket of its own (SOCK_SEQPACKET) whose path
the test binary gets in WB_CHANNEL. A reader thread takes every message as it
comes, with the sender's process id from the kernel (SO_PASSCRED), never from
the message, and hands it to Recordings (recordings.py: hello, begin,
observation, error, finish and the timed repetitions' hand-shake).

Messages from any other process (a child that inherited the connection, an
atexit handler of a finished worker, a process no runner started) are
dropped, and so is everything once close() ran (after the process's
sandbox ended). The recordings hold RECORD_BYTES at most: past it a case's
recording is cut and sealed, and the case fails as unfinished.
"""
import os
import selectors
import socket
import struct
import threading

from .recordings import RECORD_BYTES, Recordings

MESSAGE_BYTES = (1 << 20) + 8192   # common/wb_channel.c: CHUNK_BYTES_MAX, a header and a label
MAX_CONNECTIONS = 256           # a runner and its workers need a few at a time
BATCH_MESSAGES = 256            # read from one connection before looking at the others
CREDENTIALS = struct.Struct("iII")   # struct ucred: pid, uid, gid


class _Connection:
    def __init__(self, sock, pid, order):
        self.sock, self.pid, self.order = sock, pid, order
        self.case = None
        self.data_left = 0          # bytes of the current entry still to come
        self.keep = False           # whether those bytes go to the recording
        self.kind = None            # the current entry's kind


class Channel(Recordings):
    """channel = Channel(folder, "suite.test" or None for any, record_dir,
    seeds); pass channel.path in WB_CHANNEL (folder must be visible to the
    process); channel.close() once the process ended; then channel.cases
    (in the order they began) and channel.case(name, k)."""

    def __init__(self, folder, case_name, record_dir=None, seeds=None, cap=RECORD_BYTES):
        self.path = os.path.join(folder, "channel")
        if len(self.path.encode()) >= 100:
            raise RuntimeError(f"the channel's path is too long for a Unix socket: {self.path}")
        self.case_name = case_name
        self.record_dir = record_dir
        self.seeds_to_send = seeds or {}      # {(name, k): [seed, ...]} of an earlier run
        self.left = cap
        self.cases = []
        self.runner = None
        self.begun = set()
        self._open = None
        self._connections = {}
        self._accepted = 0
        self._buffer = bytearray(MESSAGE_BYTES)   # each message is read into it
        self._view = memoryview(self._buffer)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self._listener.bind(self.path)
        self._listener.listen(16)
        self._listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    # ------------------------------------------------------------ the loop

    def _serve(self):
        while not self._stop.is_set():
            ready = []
            for key, _ in self._selector.select(timeout=0.05):
                if key.fileobj is self._listener:
                    while self._accept():
                        pass
                else:
                    ready.append(key.data)
            # In the order the processes connected: the runner's hello, sent
            # before it started any worker, is taken before a worker's begin.
            for connection in sorted(ready, key=lambda c: c.order):
                for _ in range(BATCH_MESSAGES):
                    if not self._read(connection):
                        break
        # The process has ended: what it sent before is still taken.
        for connection in list(self._connections.values()):
            while self._read(connection):
                pass

    def _accept(self):
        """Takes one waiting connection; False when none was waiting."""
        try:
            sock, _ = self._listener.accept()
        except OSError:
            return False
        self._accepted += 1
        if len(self._connections) >= MAX_CONNECTIONS:
            sock.close()
            return True
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        sock.setblocking(False)
        pid = CREDENTIALS.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                 CREDENTIALS.size))[0]
        connection = _Connection(sock, pid, self._accepted)
        self._connections[sock.fileno()] = connection
        self._selector.register(sock, selectors.EVENT_READ, connection)
        return True

    def _read(self, connection):
        """Takes one message; False when there was none (or the connection
        ended)."""
        if connection.sock.fileno() < 0:
            return False       # dropped earlier in this round
        try:
            size, ancillary, flags, _ = connection.sock.recvmsg_into(
                [self._buffer], socket.CMSG_SPACE(CREDENTIALS.size))
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            size = 0
        if not size:
            self._drop(connection)
            return False
        data = self._view[:size]
        sender = None
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                sender = CREDENTIALS.unpack(payload[:CREDENTIALS.size])[0]
        if sender != connection.pid:
            return True        # a child that inherited the connection: not heard
        if flags & socket.MSG_TRUNC:
            self._seal(connection.case)
            connection.case = None
            return True
        if connection.data_left:
            self._continue_entry(connection, data)
        else:
            self._entry(connection, data)
        return True

    def _drop(self, connection):
        self._selector.unregister(connection.sock)
        del self._connections[connection.sock.fileno()]
        connection.sock.close()
        if connection.case is self._open:
            self._seal(connection.case)    # its worker ended

    # ------------------------------------------------------------- the end

    def close(self):
        """Stops taking entries (the process has ended: the rest of what it
        sent is read first), seals every case, closes the socket."""
        self._stop.set()
        self._thread.join()
        for case in self.cases:
            self._seal(case)
        for connection in list(self._connections.values()):
            connection.sock.close()
        self._selector.close()
        self._listener.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


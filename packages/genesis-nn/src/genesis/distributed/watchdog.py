"""The NCCL watchdog: a collective that does not finish within the group's timeout aborts the communicator.

NCCL's Work.wait() does not block the host: it orders the current stream after the collective. A dead or
stalled peer therefore shows up as a kernel that never ends, and a host that later synchronises hangs
with it. As torch's ProcessGroupNCCL watchdog, a daemon thread polls the events of the collectives in
flight (and NCCL's asynchronous error, e.g. a peer's closed connection); when one is still running after
the timeout, or NCCL reports an error, it calls ``on_failure(message)``: the backend aborts the
communicator (ncclCommAbort ends the kernels, so a host blocked in a synchronize returns), writes the
message to stderr and raises it, a RuntimeError naming the collective and the rank, from the next
collective or wait() on that group. (torch's default also ends the process; genesis leaves that to the
caller's exception.) A ``peer_error`` poll (the store key a failing peer sets) makes every rank abort,
as NCCL >= 2.19 needs within a node before any rank's abort can finish; a poll that raises is a failure
too, never a watchdog thread that dies silently.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


class Watchdog:
    """Collectives in flight as ``(event, what, started)``; ``check()`` is one poll (the thread runs it
    every ``interval`` seconds), which also makes it testable without a GPU."""

    def __init__(
        self,
        timeout: float,
        on_failure: Callable[[str], None],
        async_error: Callable[[], None] | None = None,
        interval: float = 0.1,
        peer_error: Callable[[], str | None] | None = None,
    ) -> None:
        self.timeout, self.interval = timeout, interval
        self._on_failure, self._async_error, self._peer_error = on_failure, async_error, peer_error
        self._in_flight: list[tuple[Any, str, float]] = []
        # Finished collectives' events, released by the next watch() in the caller's thread: the poll must
        # never hold an event's last reference. Destroying it (cuEventDestroy) blocks in the driver while
        # another thread waits on a stream that a stalled NCCL kernel holds (seen on H100s, NCCL 2.28), and
        # the watchdog stuck there never aborts the communicator that would end that wait.
        self._retired: list[tuple[Any, str, float]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.failed: str | None = None

    def watch(self, event: Any, what: str) -> None:
        """Follow ``event`` (anything with ``query()``: True once the collective is done)."""
        with self._lock:
            self._in_flight.append((event, what, time.monotonic()))
            retired, self._retired = self._retired, []
        del retired  # the finished events are destroyed here, in the caller's thread
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="genesis-nccl-watchdog", daemon=True)
            self._thread.start()

    def check(self) -> None:
        """Drop the finished collectives; report the first one past the timeout, or NCCL's async error."""
        if self.failed is not None or self._stop.is_set():  # stopped: the communicator may be gone
            return
        with self._lock:
            running: list[tuple[Any, str, float]] = []
            for entry in self._in_flight:
                (running if not entry[0].query() else self._retired).append(entry)
            self._in_flight = running  # every entry lives on in one of the two lists: nothing is destroyed here
            late = [entry for entry in running if time.monotonic() - entry[2] > self.timeout]
        if late:
            _, what, started = late[0]
            self._fail(
                f"{what} did not finish within the group's timeout ({self.timeout:g} s; it has run "
                f"{time.monotonic() - started:.1f} s): a peer died or stalled"
            )
            return
        if self._async_error is not None:
            try:
                self._async_error()
            except Exception as e:  # NCCL's own report (a peer's connection closed, ...)
                self._fail(f"NCCL reported an asynchronous error: {e}")
                return
        if self._peer_error is not None:  # a peer's watchdog aborted its communicator: abort ours too
            peer = self._peer_error()
            if peer is not None:
                self._fail(f"{peer} (a peer aborted the group's communicator)")

    def _fail(self, message: str) -> None:
        self.failed = message
        self._on_failure(message)

    def _run(self) -> None:
        while not self._stop.wait(self.interval) and self.failed is None:
            try:
                self.check()
            except Exception as e:  # e.g. cuEventQuery's error: a watchdog that died silently would hang the job
                if self.failed is None and not self._stop.is_set():
                    self._fail(f"the watchdog's poll failed: {type(e).__name__}: {e}")

    def stop(self) -> None:
        """End the polling, and wait for a poll in progress to finish: the backend destroys the
        communicator next, and a poll that is still inside ncclCommGetAsyncError would use it freed.
        (From the watchdog's own thread, its verdict aborting the communicator, there is none to wait for.)"""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=max(10 * self.interval, 5.0))

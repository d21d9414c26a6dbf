"""Work: the handle an ``async_op=True`` collective returns (torch.distributed's Work)."""

from __future__ import annotations

from collections.abc import Callable


class Work:
    """A collective in flight. ``wait()`` blocks until its result may be used; ``is_completed()`` polls.

    A backend builds one from three callables: ``wait`` (block until the transfer is done: gloo blocks the
    host, NCCL makes the current stream wait), ``done`` (a non-blocking poll), and ``then`` (what must follow
    the transfer before the result is final, run once, e.g. copying a staged result into place).
    """

    def __init__(
        self,
        wait: Callable[[], object],
        done: Callable[[], bool],
        then: Callable[[], None] | None = None,
    ) -> None:
        self._wait, self._done, self._then = wait, done, then
        self._finished = False

    def wait(self, timeout: object = None) -> bool:
        """Block until the result may be used (for NCCL: until the current stream is ordered after it)."""
        if not self._finished:
            self._wait()
            self._finish()
        return True

    def is_completed(self) -> bool:
        """Whether the collective has finished (a finished one's result is final: no wait() needed to read it)."""
        if self._finished:
            return True
        if not self._done():
            return False
        self._wait()  # finished: returns at once, and lets the backend surface an error
        self._finish()
        return True

    def _finish(self) -> None:
        self._finished = True
        if self._then is not None:
            then, self._then = self._then, None
            then()

    @staticmethod
    def completed() -> Work:
        """A Work with nothing left to do (a collective over one rank)."""
        return Work(lambda: None, lambda: True)

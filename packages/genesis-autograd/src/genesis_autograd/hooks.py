"""Small helpers Tensor's class statement uses: hook handles, and docstrings for the in-place forms."""

from __future__ import annotations

from collections.abc import Callable


class RemovableHandle:
    """What register_hook returns: ``remove()`` takes the hook off again."""

    def __init__(self, hooks: list, hook: Callable) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        """Unregister the hook (a second call does nothing)."""
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def document_inplace_forms(cls: type) -> None:
    """Give each in-place method ``x_`` that has no docstring of its own torch's: "In-place version of x()".

    Most of them are one-line forwards to ``_inplace`` or ``_math_inplace`` beside their out-of-place
    form, which carries the real docstring.
    """
    for klass in cls.__mro__:
        for name, member in vars(klass).items():
            if (
                name.endswith("_")
                and not name.startswith("_")
                and callable(member)
                and not member.__doc__
                and callable(getattr(cls, name[:-1], None))
            ):
                member.__doc__ = f"In-place version of :meth:`{name[:-1]}`."

"""rltune's errors as Python exceptions.

Every failed call raises an RltuneError carrying rltune's message (the
status name is in `.status`, the numeric code in `.code`). Bad user input
(INVALID_ARGUMENT, PARSE_ERROR, ILLEGAL_SCHEDULE) also subclasses
ValueError, so `except ValueError` catches it; IO_ERROR subclasses OSError,
OUT_OF_MEMORY MemoryError.
"""

from __future__ import annotations


class RltuneError(Exception):
    """A failed rltune call: `status` is the status name ("PARSE_ERROR"),
    `code` its number, `message` rltune's message."""

    status: str = "UNKNOWN_STATUS"
    code: int = -1

    def __init__(self, message: str, status: str | None = None, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class InvalidArgumentError(RltuneError, ValueError):
    """A value out of range, an unknown name (INVALID_ARGUMENT)."""

    status, code = "INVALID_ARGUMENT", 1


class ParseError(RltuneError, ValueError):
    """Text that does not follow its grammar (PARSE_ERROR)."""

    status, code = "PARSE_ERROR", 2


class IllegalScheduleError(RltuneError, ValueError):
    """A schedule step or env action refused by its legality check."""

    status, code = "ILLEGAL_SCHEDULE", 3


class RltuneIOError(RltuneError, OSError):
    """A file or process could not be read, written or started."""

    status, code = "IO_ERROR", 4


class RltuneMemoryError(RltuneError, MemoryError):
    status, code = "OUT_OF_MEMORY", 5


class MeasurementError(RltuneError):
    """A build or run failure where a call needed it to succeed (the
    reference kernel of a workload, the start state of an env)."""


class InternalError(RltuneError):
    """A bug in rltune (INTERNAL): please report it."""

    status, code = "INTERNAL", 11


class LibraryNotFoundError(RltuneError, ImportError):
    """librltune.so could not be found or loaded."""

    status = "LIBRARY_NOT_FOUND"


_BY_CODE: dict[int, type[RltuneError]] = {
    1: InvalidArgumentError,
    2: ParseError,
    3: IllegalScheduleError,
    4: RltuneIOError,
    5: RltuneMemoryError,
    6: MeasurementError,
    7: MeasurementError,
    8: MeasurementError,
    9: MeasurementError,
    10: MeasurementError,
    11: InternalError,
}


def error_for_status(code: int, status: str, message: str) -> RltuneError:
    """The exception for an rltune status."""
    cls = _BY_CODE.get(code, RltuneError)
    return cls(message, status=status, code=code)

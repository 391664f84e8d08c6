"""graft's exceptions and diagnostics.

Every failure of the library surfaces as a :class:`graft.Error`: a
:class:`UserError` for bad input (a malformed graph, a rule that does not
check, a missing file), an :class:`InternalError` for a graft bug. The
message is the clang-style rendering the CLI prints; ``diagnostics`` holds
each diagnostic with its location, and ``location`` the first one's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional


@dataclass
class Note:
    message: str
    file: Optional[str] = None
    line: Optional[int] = None
    column: Optional[int] = None


@dataclass
class Diagnostic:
    """One diagnostic: severity ("error", "warning", "note"), kind ("user" or
    "internal"), message, source location (file/line/column, ``None`` when it
    has none), notes, and ``text``, its clang-style rendering."""

    severity: str
    kind: str
    message: str
    file: Optional[str] = None
    line: Optional[int] = None
    column: Optional[int] = None
    notes: List[Note] = field(default_factory=list)
    text: str = ""

    @classmethod
    def _from_dict(cls, d: dict) -> "Diagnostic":
        return cls(
            severity=d["severity"],
            kind=d["kind"],
            message=d["message"],
            file=d.get("file"),
            line=d.get("line"),
            column=d.get("column"),
            notes=[Note(n["message"], n.get("file"), n.get("line"), n.get("column"))
                   for n in d.get("notes", [])],
            text=d.get("text", ""),
        )

    @property
    def location(self) -> Optional[str]:
        """"file:line:col", or None for a diagnostic without a location."""
        if self.file is None:
            return None
        return f"{self.file}:{self.line}:{self.column}"

    def __str__(self) -> str:
        return self.text or f"{self.severity}: {self.message}"


class Error(Exception):
    """Base of every exception graft raises."""

    def __init__(self, message: str, diagnostics=()):
        super().__init__(message)
        self.diagnostics: List[Diagnostic] = [
            d if isinstance(d, Diagnostic) else Diagnostic._from_dict(d) for d in diagnostics
        ]

    @property
    def location(self) -> Optional[str]:
        """The first located diagnostic's "file:line:col", else None."""
        for d in self.diagnostics:
            if d.location:
                return d.location
        return None


class UserError(Error):
    """Bad input: the graph, rule, program or arguments are invalid."""


class InternalError(Error):
    """A graft bug (an invariant broke); please report it."""


class ConversionError(UserError):
    """graft.fx could not convert a torch.fx graph (an op or argument it does
    not know); the message names the fx node."""

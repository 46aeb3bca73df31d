"""What a trace says beside its paths: notes in words, and which of them are set-up phases that
did not finish (typed, so no status is read from a note's wording)."""

from __future__ import annotations


class Notes(list[str]):
    """The trace's notes, in order; `unfinished` holds those that name a set-up phase that did
    not finish (no path can be selected on top of it)."""

    def __init__(self) -> None:
        super().__init__()
        self.unfinished: list[str] = []

    def did_not_finish(self, text: str) -> None:
        self.append(text)
        self.unfinished.append(text)

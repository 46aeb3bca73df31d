"""What a trace says beside its paths: notes in words, and which of them are set-up phases that
did not finish (typed, so no status is read from a note's wording)."""

from __future__ import annotations


class Notes(list[str]):
    """The trace's notes, in order; `unfinished` holds those that name a set-up phase that did
    not finish (no path can be selected on top of it); `weights` those that say the
    checkpoint's weights do not fit the layers built (the answer's first caveat)."""

    def __init__(self) -> None:
        super().__init__()
        self.unfinished: list[str] = []
        self.weights: list[str] = []

    def did_not_finish(self, text: str) -> None:
        self.append(text)
        self.unfinished.append(text)

    def weights_unfit(self, text: str) -> None:
        """A note that the layers the release builds are not the ones the checkpoint's
        weights are laid out for (loading is not traced: said, not decided)."""
        self.append(text)
        self.weights.append(text)

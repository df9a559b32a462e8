"""The runbook as it is written, shared by its procedures."""

from __future__ import annotations

from collections.abc import Callable


class Runbook:
    """Its lines so far and the number of the next step: steps are numbered across the whole runbook
    (the bring-up simulation replays them in that order), whichever procedure writes them."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.next_step = 1

    def write(self, *lines: str) -> None:
        self.lines += lines

    def part(self, title: str) -> None:
        self.lines.append(f"## {title}\n")

    def step(self, title: str, body: str) -> None:
        self.numbered(lambda number: f"### {number}. {title}\n\n{body.strip()}\n")

    def numbered(self, text: Callable[[int], str]) -> None:
        """A step whose procedure writes its own heading from the number it is given."""
        self.lines.append(text(self.next_step))
        self.next_step += 1

    def text(self) -> str:
        return "\n".join(self.lines)

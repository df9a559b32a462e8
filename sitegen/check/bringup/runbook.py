"""The generated RUNBOOK as the simulation replays it: its numbered steps (a step may wait for an
Application: "Once `<app>` is Healthy") and the shell commands of their code blocks."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass


@dataclass
class RunbookStep:
    number: int
    title: str
    cluster: str | None
    body: str
    after_app: str | None  # "Once `<app>` is Healthy"

    @property
    def label(self) -> str:
        return f"runbook step {self.number} ({self.title})"


def runbook_steps(text: str) -> list[RunbookStep]:
    steps: list[RunbookStep] = []
    cluster: str | None = None
    for block in re.split(r"^(?=##+ )", text, flags=re.M):
        heading = block.splitlines()[0] if block.strip() else ""
        if heading.startswith("## "):
            named = re.search(r"`([\w-]+)`", heading)
            cluster = named.group(1) if named else None
            continue
        found = re.match(r"### (\d+)\. (.+)", heading)
        if not found:
            continue
        body = block[len(heading) :]
        after = re.search(r"^Once `([\w-]+)` is Healthy", body.strip(), flags=re.M)
        steps.append(
            RunbookStep(int(found.group(1)), found.group(2), cluster, body, after.group(1) if after else None)
        )
    return steps


def shell_lines(body: str) -> list[tuple[str, list[str]]]:
    """Each shell line of the step's code blocks (continuations joined, comments cut), with the
    here-document that follows it."""
    out: list[tuple[str, list[str]]] = []
    for code in re.findall(r"```sh\n(.*?)```", body, flags=re.S):
        lines = code.replace("\\\n", " ").splitlines()
        i = 0
        while i < len(lines):
            line = lines[i].split("   #")[0].strip()
            i += 1
            if not line or line.startswith("#"):
                continue
            heredoc: list[str] = []
            marker = re.search(r"<<'?(\w+)'?", line)
            if marker:
                while i < len(lines) and lines[i].strip() != marker.group(1):
                    heredoc.append(lines[i])
                    i += 1
                i += 1
                line = line[: marker.start()]
            out.append((line, heredoc))
    return out


def words_of(line: str) -> list[list[str]]:
    """The commands of one shell line (split at `&&` and pipes) as words."""
    out = []
    for part in re.split(r"\s*(?:&&|\|)\s*", line):
        try:
            words = shlex.split(part)
        except ValueError:
            words = part.split()
        if words:
            out.append(words)
    return out


def commands(body: str) -> list[tuple[list[str], list[str]]]:
    """Each shell command of the step's code blocks as words, with the here-document that follows it."""
    return [(words, heredoc) for line, heredoc in shell_lines(body) for words in words_of(line)]

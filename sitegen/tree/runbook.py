"""The runbook's grammar, written and read in one place: the procedures and the components' own steps
(`Component.operator_steps`) write it through `Runbook` (parts, numbered steps, a step that waits on an
Application, the vault keys a step lists, `sh` blocks), and the bring-up simulation reads the same
shapes back from the generated RUNBOOK.md (`runbook_steps`, `listed_keys`, `commands`): the document
people follow is the one it replays."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

_PART = re.compile(r"^(?=##+ )", re.M)
_STEP = re.compile(r"### (\d+)\. (.+)")
_AFTER = re.compile(r"^Once `([\w-]+)` is Healthy", re.M)
_KEY = re.compile(r"^- `([\w./-]+)`: (.*)$", re.M)
_SH = re.compile(r"```sh\n(.*?)```", re.S)


# Waiting for Jobs that may fail: `kubectl wait` takes one condition, so waiting for Complete alone
# sits out its whole timeout (hours for a burn-in) once a Job has failed. The function stops at the
# first failed Job, naming it; the bring-up replays `jobs_done <namespace> <seconds> job/...` as a wait
# for every Job to complete.
JOBS_DONE = "jobs_done"
JOBS_DONE_FUNCTION = """\
jobs_done() {  # namespace, seconds, job/... : every Job Complete in time, or the first that failed
  local ns=$1 seconds=$2 deadline=$((SECONDS + $2)) job; shift 2
  until kubectl -n "$ns" wait --for=condition=complete --timeout=30s "$@" >/dev/null 2>&1; do
    for job in "$@"; do
      if kubectl -n "$ns" wait --for=condition=failed --timeout=1s "$job" >/dev/null 2>&1; then
        echo "$job failed: kubectl -n $ns logs $job"; return 1
      fi
    done
    [ "$SECONDS" -lt "$deadline" ] || { echo "not done in $seconds s: $*"; return 1; }
  done
}"""


def jobs_done(namespace: str, seconds: int, jobs: list[str]) -> str:
    return f"{JOBS_DONE} {namespace} {seconds} {' '.join(f'job/{j}' for j in jobs)}"


def jobs_done_as_wait(args: list[str]) -> list[str]:
    """A `jobs_done` call's arguments as the `kubectl` wait the bring-up replays: every Job Complete."""
    namespace, _, *jobs = args
    return ["-n", namespace, "wait", "--for=condition=complete", *jobs]


class Runbook:
    """Its lines so far and the number of the next step: steps are numbered across the whole runbook
    (the bring-up simulation replays them in that order), whichever procedure writes them."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.next_step = 1

    def write(self, *lines: str) -> None:
        self.lines += lines

    def part(self, title: str) -> None:
        """A part of the runbook; the first name in backticks in its title is the cluster its steps'
        commands run against."""
        self.lines.append(f"## {title}\n")

    def step(self, title: str, body: str, *, after: str | None = None) -> None:
        """A numbered step; with `after`, one that runs once that Application is Healthy (while Argo CD
        syncs the rest)."""
        text = f"Once `{after}` is Healthy, {body.strip()}" if after else body.strip()
        self.numbered(lambda number: f"### {number}. {title}\n\n{text}\n")

    def numbered(self, text: Callable[[int], str]) -> None:
        """A step whose procedure writes its own heading from the number it is given."""
        self.lines.append(text(self.next_step))
        self.next_step += 1

    def text(self) -> str:
        return "\n".join(self.lines)


def key_line(key: str, text: str) -> str:
    """A vault key a step lists for the operator to write: `text` names its properties."""
    return f"- `{key}`: {text}"


@dataclass
class RunbookStep:
    number: int
    title: str
    cluster: str | None
    body: str
    after_app: str | None  # the Application it waits on (`Runbook.step`'s `after`)

    @property
    def label(self) -> str:
        return f"runbook step {self.number} ({self.title})"


def runbook_steps(text: str) -> list[RunbookStep]:
    """The numbered steps of a runbook, each with the cluster of its part."""
    steps: list[RunbookStep] = []
    cluster: str | None = None
    for block in _PART.split(text):
        heading = block.splitlines()[0] if block.strip() else ""
        if heading.startswith("## "):
            named = re.search(r"`([\w-]+)`", heading)
            cluster = named.group(1) if named else None
            continue
        found = _STEP.match(heading)
        if not found:
            continue
        body = block[len(heading) :]
        after = _AFTER.search(body.strip())
        steps.append(
            RunbookStep(int(found.group(1)), found.group(2), cluster, body, after.group(1) if after else None)
        )
    return steps


def listed_keys(body: str) -> list[tuple[str, str]]:
    """The vault keys a step lists (`key_line`), with what each line says of their properties."""
    return _KEY.findall(body)


def shell_lines(body: str) -> list[tuple[str, list[str]]]:
    """Each shell line of the step's code blocks (continuations joined, comments cut), with the
    here-document that follows it."""
    out: list[tuple[str, list[str]]] = []
    for code in _SH.findall(body):
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

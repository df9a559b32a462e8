"""The one base of the failures the generator knows: bad config, a chart it cannot have, a revision git
does not know, a scanner it cannot read. The CLI prints each line of one as `error: <line>` and exits 2;
any other exception is a bug and ends as a traceback, on purpose."""

from __future__ import annotations


class SiteError(Exception):
    """A known failure, said in one line (or several, each one line, by `lines`)."""

    def lines(self) -> list[str]:
        return [str(self)]


class Refused(SiteError):
    """A command line the CLI cannot act on: an unknown variant, a missing folder, options that do not
    go together."""

"""The stays domain, pure: no I/O, no logging, no clock.

`summary.summarize` is the entry point (validate every record, then word the summary);
`validate` judges one record, `timestamps` parses RFC 3339, `wording` writes the Japanese text.
"""

from handlers.stays.core.summary import summarize

__all__ = ["summarize"]

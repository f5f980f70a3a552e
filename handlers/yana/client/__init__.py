"""The yana client package (seed 001): duo-talk's SpeakerProvider over the generated yana client.

* `generated.yana.client.YanaClient` — typed calls (one method per tool and resource) over HTTP,
  MCP streamable HTTP or stdio; `local.LocalBackend` runs them in process through the pipeline.
* `YanaSpeaker` / `SpeakerConfig` — the seed's `SpeakerProvider.generate()` with its retry,
  RAG fallback and shaping rules, configured from SPEAKER_A_* variables (`speaker.py`).
* `sentences.split_sentences` — the one sentence rule, shared with the server's reply policy.

It lives with the yana service (issue 43: the runtime knows no service) and imports none of the
server's modules. The names below load on first use, so the server's handlers can import
`sentences` without loading the client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from handlers.yana.client.speaker import (
        SpeakerConfig,
        SpeakerProvider,
        YanaError,
        YanaSpeaker,
        clean_id,
        shape_text,
    )

__all__ = ["SpeakerConfig", "SpeakerProvider", "YanaError", "YanaSpeaker", "clean_id", "shape_text"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from handlers.yana.client import speaker

        return getattr(speaker, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

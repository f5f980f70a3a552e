"""One sentence rule for yana's reply policy (server) and duo-talk's shaping (client).

It lives on the client side (handlers/yana/client/) so the client needs none of the server's
modules; the server's reply policy (core/voice.py) imports it from here.
"""

from __future__ import annotations

__all__ = ["split_sentences"]

_TERMINATORS = "。！？!?"
_CLOSERS = "」』）)】"


def split_sentences(text: str) -> list[str]:
    """Sentences ending at 。！？!? (closing brackets stay with them) or a line break.

    A fragment that is only a parenthesis （…） joins the sentence before it, so an
    appended provenance never counts as a sentence of its own.
    """
    sentences: list[str] = []
    buf = ""
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\n":
            if buf.strip():
                sentences.append(buf.strip())
            buf = ""
        else:
            buf += ch
            if ch in _TERMINATORS:
                while i + 1 < len(text) and (text[i + 1] in _TERMINATORS or text[i + 1] in _CLOSERS):
                    i += 1
                    buf += text[i]
                sentences.append(buf.strip())
                buf = ""
        i += 1
    if buf.strip():
        sentences.append(buf.strip())
    merged: list[str] = []
    for sentence in sentences:
        if merged and sentence[:1] in "（(" and sentence[-1:] in "）)":
            merged[-1] += sentence
        elif sentence:
            merged.append(sentence)
    return merged

"""kumitate/ and codegen/ reach into no other library's private names outside kumitate/compat/ (issue 31,
item 1; issue 44).

ruff's SLF001 (pyproject.toml) refuses `obj._name`; this also catches what it cannot see: a private
name reached by `getattr(obj, "_name")` and friends, and an import from a library's private module.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = (REPO / "kumitate", REPO / "codegen")
COMPAT = REPO / "kumitate" / "compat"
PRIVATE = re.compile(r"\b(?!self\b|cls\b)([A-Za-z_][\w]*)\.(_[a-z]\w*)\b")
"""`obj._name` where obj is not self/cls (dunder names do not match: `_[a-z]`)."""
ALLOWED = {
    "_current_frames": "sys._current_frames, documented in the standard library (heartbeat.py)",
}
PRIVATE_BY_NAME = re.compile(r"""(?:get|set|has|del)attr\([^,]+,\s*["'](_[a-z]\w*)["']""")
IMPORT = re.compile(r"^\s*(?:from|import)\s+([\w.]+)")
"""An import line, and the module it imports from (a private module: a part starting with `_`, not kumitate's own)."""


def own_private_names(text: str) -> set[str]:
    """Private names a module declares itself (a class attribute, a `self._x`, a def)."""
    declared = re.findall(r"^\s+(_[a-z]\w*)\s*[:=]", text, re.M)
    declared += re.findall(r"\bself\.(_[a-z]\w*)", text)
    declared += re.findall(r"\bdef (_[a-z]\w*)", text)
    return set(declared)


def reach_ins(path: Path, text: str) -> list[str]:
    found = []
    own = own_private_names(text)
    shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        imported = IMPORT.match(code)
        if imported:
            parts = imported.group(1).split(".")
            own_module = parts[0] in ("", "kumitate", "codegen")  # "": a relative import
            names = [p for p in parts[1:] if p.startswith("_") and not own_module]
        else:
            names = [m.group(2) for m in PRIVATE.finditer(re.sub(r"(['\"]).*?\1", "''", code))]
            names += PRIVATE_BY_NAME.findall(code)
            names = [n for n in names if n not in own]
        found += [f"{shown}:{number}: {line.strip()}" for n in names if n not in ALLOWED]
    return found


def test_no_private_reach_ins_outside_the_compat_modules() -> None:
    found = []
    for root in ROOTS:
        for path in sorted(root.rglob("*.py")):
            if not path.is_relative_to(COMPAT):
                found += reach_ins(path, path.read_text(encoding="utf-8"))
    assert found == [], "private names of other libraries (move them to kumitate/compat/<library>.py):\n" + "\n".join(
        found
    )


def test_the_check_finds_a_reach_in() -> None:
    sample = (
        "meta = rc._srctx.meta\n"
        "manager.asgi_app = X(manager._handle_request)\n"
        "setattr(server, '_table', t)\n"
        "from httpx._transports.default import map_httpcore_exceptions\n"
        "from kumitate._lazy import x\n"
        "from ._own import y\n"
    )
    found = reach_ins(Path("sample.py"), sample)
    assert [line.split(": ", 1)[1] for line in found] == [
        "meta = rc._srctx.meta",
        "manager.asgi_app = X(manager._handle_request)",
        "setattr(server, '_table', t)",
        "from httpx._transports.default import map_httpcore_exceptions",
    ]

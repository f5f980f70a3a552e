"""Agent-readiness lint rules (KT2xx): is each tool ready to be chosen and called by an LLM?

Same style as codegen/lint.py: every rule has a stable ID in RULES, every check is a function
`(tree) -> Iterator[Problem]` listed in CHECKS. Findings that are accepted on purpose live in
specs/readiness-baseline.yaml as [{rule, file, pointer, reason}]; `filter_baseline` drops them,
and an entry without a reason is itself a problem (KT206). `lint(tree)` runs everything and
applies the tree's baseline; an entry that matches nothing any more is a warning (remove it).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from codegen import docs
from codegen.refs import JsonValue, parse_yaml
from codegen.specs import Problem, SpecTree, ToolSpec

RULES: dict[str, str] = {
    "KT201": "the description says when to use the tool and when not to",
    "KT202": "every input parameter (recursively) has a description",
    "KT203": "every enum value is explained (field description or x-enum-descriptions / oneOf const)",
    "KT204": "no two tools have near-identical descriptions",
    "KT205": "each service's and named toolset's MCP tools/list stays within its token budget (specs/token-budget.yaml)",
    "KT206": "every readiness baseline entry names a rule, file and pointer and gives a reason",
}

BASELINE_FILE = "readiness-baseline.yaml"

USE_CUES = (
    r"\b(use|call) (it|this|them)\b",
    r"\buse (when|whenever|for|if|after|before|to)\b",
    r"\buseful (for|when)\b",
    r"使(う|います|ってください)",
    r"使用(する|します|して)",
    r"呼び出(す|します|して)",
)
"""A sentence that says when to use the tool: "Use it to/when ...", "Call it after ...", 「…に使う」."""
AVOID_CUES = (
    r"\b(do not|don't|never|not) (use|call)\b",
    r"\bnot for\b",
    r"\binstead\b",
    r"\brather than\b",
    r"\bnot (meant|intended|suitable)\b",
    r"\bno need to (use|call)\b",
    r"使わない",
    r"使いません",
    r"使用しない",
    r"ではなく",
    r"向きません",
    r"代わりに",
)
"""A sentence that says when not to: "Do not use it for ...", "... instead", 「…には使わない」; or one that
points to another tool ("use `search` for that", "For one month use get_monthly_household")."""
SIMILARITY = 0.9


def _rel(path: Path, tree: SpecTree) -> str:
    try:
        return path.resolve().relative_to(tree.root.parent).as_posix()
    except ValueError:
        return path.as_posix()


def _tools(tree: SpecTree) -> Iterator[tuple[ToolSpec, str]]:
    for tool in tree.all_tools():
        yield tool, _rel(tool.source, tree)


def _has(patterns: tuple[str, ...], text: str) -> bool:
    return any(re.search(p, text, re.IGNORECASE) for p in patterns)


def sentences(text: str) -> list[str]:
    """`text` split into sentences at English and Japanese sentence ends and at line breaks."""
    return [s.strip() for s in re.split(r"(?<=[.!?。！？])\s+|(?<=[。！？])|\n+", text) if s.strip()]


def _points_elsewhere(sentence: str, others: set[str]) -> bool:
    """ "use X" / "call X" naming another tool: what to use instead."""
    if not re.search(r"\b(use|call)\b|使", sentence, re.IGNORECASE):
        return False
    return any(re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", sentence) for name in others)


def check_when_to_use(tree: SpecTree) -> Iterator[Problem]:
    """KT201: a sentence says when to use the tool, and a sentence says when not to (or what to use instead).

    Keywords anywhere are not enough: "Returns labels when found. Never fails." says neither."""
    names = {t.name for t in tree.all_tools()}
    for tool, rel in _tools(tree):
        said = sentences(tool.description)
        missing = []
        if not any(_has(USE_CUES, s) for s in said):
            missing.append('when to use it (a sentence like "Use it to/when ...", 「…に使う」)')
        others = names - {tool.name}
        if not any(_has(AVOID_CUES, s) or _points_elsewhere(s, others) for s in said):
            missing.append(
                'when not to (a sentence like "Do not use it for ...", "use <other tool> instead", 「…には使わない」)'
            )
        if missing:
            yield Problem(rel, "/description", "KT201", "the description does not say " + " nor ".join(missing))


def _walk(schema: JsonValue, pointer: str, path: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(pointer, field path, schema) of every property under `schema`, depth first."""
    if not isinstance(schema, dict):
        return
    props = schema.get("properties")
    if isinstance(props, dict):
        for name, sub in props.items():
            if isinstance(sub, dict):
                ptr, sub_path = f"{pointer}/properties/{name}", f"{path}.{name}" if path else name
                yield ptr, sub_path, sub
                yield from _walk(sub, ptr, sub_path)
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _walk(items, f"{pointer}/items", f"{path}[]")
    for key in ("oneOf", "anyOf", "allOf"):
        for i, sub in enumerate(schema.get(key) or []):
            yield from _walk(sub, f"{pointer}/{key}/{i}", path)


def _described(schema: dict[str, Any]) -> bool:
    if str(schema.get("description") or "").strip() or str(schema.get("title") or "").strip():
        return True
    # a nullable wrapper or a union whose branches all say what they are
    branches = schema.get("anyOf") or schema.get("oneOf")
    return (
        isinstance(branches, list)
        and bool(branches)
        and all(
            isinstance(b, dict) and (b.get("type") == "null" or str(b.get("description") or "").strip())
            for b in branches
        )
    )


def check_parameter_descriptions(tree: SpecTree) -> Iterator[Problem]:
    """KT202: every input parameter, at any depth, has a description."""
    for tool, rel in _tools(tree):
        for pointer, path, sub in _walk(tool.input_schema, "/input", ""):
            if not _described(sub):
                yield Problem(rel, pointer, "KT202", f"input parameter `{path}` has no description")


def _enums(schema: JsonValue, pointer: str, path: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    if isinstance(schema, dict) and isinstance(schema.get("enum"), list):
        yield pointer, path, schema
    yield from ((p, f, s) for p, f, s in _walk(schema, pointer, path) if isinstance(s.get("enum"), list))


def _enum_explained(schema: dict[str, Any], parents: list[str]) -> list[Any]:
    """The enum values that nothing explains."""
    values = schema["enum"]
    described = schema.get("x-enum-descriptions")
    if isinstance(described, dict):
        return [v for v in values if not str(described.get(str(v)) or "").strip()]
    if isinstance(described, list):
        return [v for i, v in enumerate(values) if i >= len(described) or not str(described[i] or "").strip()]
    text = " ".join([str(schema.get("description") or ""), *parents])
    return [v for v in values if v is not None and not re.search(rf"(?<![\w-]){re.escape(str(v))}(?![\w-])", text)]


def _const_branches_explained(schema: dict[str, Any]) -> list[Any] | None:
    """For oneOf/anyOf made of {const, description} branches: the undescribed consts (None if not that shape)."""
    branches = schema.get("oneOf") or schema.get("anyOf")
    if (
        not isinstance(branches, list)
        or not branches
        or not all(isinstance(b, dict) and "const" in b for b in branches)
    ):
        return None
    return [b["const"] for b in branches if not str(b.get("description") or b.get("title") or "").strip()]


def check_enums(tree: SpecTree) -> Iterator[Problem]:
    """KT203: every enum value is explained (in the field's description, x-enum-descriptions or a oneOf const)."""
    for tool, rel in _tools(tree):
        context = [tool.description]
        for part, schema in (("input", tool.input_schema), ("output", tool.output_schema)):
            for pointer, path, sub in _enums(schema, f"/{part}", ""):
                missing = _enum_explained(sub, context)
                if missing:
                    shown = ", ".join(repr(v) for v in missing)
                    yield Problem(
                        rel,
                        pointer,
                        "KT203",
                        f"{part} `{path or '(root)'}`: enum value(s) {shown} are not explained (mention them in the"
                        " field's or the tool's description, or add x-enum-descriptions)",
                    )
            for pointer, path, sub in _walk(schema, f"/{part}", ""):
                missing_consts = _const_branches_explained(sub)
                if missing_consts:
                    yield Problem(
                        rel,
                        pointer,
                        "KT203",
                        f"{part} `{path}`: oneOf/anyOf const value(s) {missing_consts} have no description",
                    )


def _normalise(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def check_similar_descriptions(tree: SpecTree) -> Iterator[Problem]:
    """KT204: no two tools have near-identical descriptions (an LLM could not choose between them)."""
    tools = sorted(_tools(tree), key=lambda pair: pair[1])
    texts = [_normalise(t.description) for t, _ in tools]
    for i, (_tool, rel) in enumerate(tools):
        for j in range(i):
            other, _ = tools[j]
            matcher = difflib.SequenceMatcher(None, texts[j], texts[i], autojunk=False)
            if matcher.real_quick_ratio() < SIMILARITY or matcher.quick_ratio() < SIMILARITY:
                continue
            ratio = matcher.ratio()
            if ratio >= SIMILARITY:
                yield Problem(
                    rel,
                    "/description",
                    "KT204",
                    f"the description is {ratio:.0%} the same as {other.service}.{other.name}'s: say how they differ",
                )


def check_budget(tree: SpecTree) -> Iterator[Problem]:
    """KT205: each service's and toolset's tools/list stays within its token budget."""
    yield from docs.check_budget(tree)


CHECKS: tuple[Callable[[SpecTree], Iterator[Problem]], ...] = (
    check_when_to_use,
    check_parameter_descriptions,
    check_enums,
    check_similar_descriptions,
    check_budget,
)


# --- the baseline --------------------------------------------------------------------------


def load_baseline(path: Path) -> list[dict[str, Any]]:
    """The entries of a baseline file ([] when it does not exist)."""
    if not path.is_file():
        return []
    doc = parse_yaml(path.read_text(encoding="utf-8")) or []
    if isinstance(doc, dict):
        doc = doc.get("baseline") or doc.get("accepted") or []
    return [e if isinstance(e, dict) else {"invalid": e} for e in doc] if isinstance(doc, list) else [{"invalid": doc}]


def filter_baseline(
    problems: list[Problem], baseline: list[dict[str, Any]], source: str = f"specs/{BASELINE_FILE}"
) -> list[Problem]:
    """Drop the problems the baseline accepts; an entry without a rule/file/reason is a KT206 problem."""
    accepted: set[tuple[str, str, str]] = set()
    out: list[Problem] = []
    for i, entry in enumerate(baseline):
        rule, file, pointer = entry.get("rule"), entry.get("file"), entry.get("pointer", "")
        reason = entry.get("reason")
        if not isinstance(rule, str) or not isinstance(file, str) or not isinstance(pointer, str):
            out.append(Problem(source, f"/{i}", "KT206", "a baseline entry needs rule, file and pointer"))
            continue
        if not isinstance(reason, str) or not reason.strip():
            out.append(
                Problem(source, f"/{i}", "KT206", f"the baseline entry for {rule} at {file}#{pointer} has no reason")
            )
            continue
        accepted.add((rule, file, pointer))
    out += [p for p in problems if (p.rule, p.file, p.pointer) not in accepted]
    return sorted(set(out), key=lambda p: (p.file, p.pointer, p.rule, p.message))


def stale_entries(problems: list[Problem], baseline: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """(index, entry) of the well-formed baseline entries that accept none of `problems` (fixed: remove them)."""
    found = {(p.rule, p.file, p.pointer) for p in problems}
    out = []
    for i, entry in enumerate(baseline):
        key = (entry.get("rule"), entry.get("file"), entry.get("pointer", ""))
        if all(isinstance(k, str) for k in key) and str(entry.get("reason") or "").strip() and key not in found:
            out.append((i, entry))
    return out


def lint(tree: SpecTree) -> list[Problem]:
    """Every readiness problem of a tree, minus those its specs/readiness-baseline.yaml accepts."""
    return lint_with_stale(tree)[0]


def lint_with_stale(tree: SpecTree) -> tuple[list[Problem], list[tuple[int, dict[str, Any]]]]:
    """lint(tree), and the baseline entries that match nothing (they are warnings, not problems)."""
    problems = [p for check in CHECKS for p in check(tree)]
    baseline = load_baseline(tree.root / BASELINE_FILE)
    return filter_baseline(problems, baseline), stale_entries(problems, baseline)


def main(argv: list[str] | None = None) -> int:
    """python -m codegen.readiness [--specs DIR]: print readiness problems; exit 1 if there is any."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m codegen.readiness", description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=Path, help="the specs directory (default: the project's)")
    args = parser.parse_args(argv)
    if args.specs is None:
        from kumitate.project import Project

        args.specs = Project.discover().specs
    problems, stale = lint_with_stale(load_tree(args.specs))
    for i, entry in stale:
        print(
            f"warning: specs/{BASELINE_FILE}#/{i}: the entry for {entry['rule']} at"
            f" {entry['file']}#{entry.get('pointer', '')} matches nothing any more: remove it",
            file=sys.stderr,
        )
    for problem in problems:
        print(problem, file=sys.stderr)
    from codegen import locate

    locate.annotate(problems, args.specs.resolve().parent)
    if problems:
        print(
            f"{len(problems)} readiness problem(s) (accept one with a reason in specs/{BASELINE_FILE})", file=sys.stderr
        )
        return 1
    print("agent readiness OK")
    return 0


def load_tree(specs_dir: Path) -> SpecTree:
    """The spec tree under `specs_dir` (imported late: the rules above need only the types)."""
    from codegen import specs

    return specs.load(specs_dir)


if __name__ == "__main__":
    raise SystemExit(main())

"""Spec review for pull requests: `kumitate diff BASE HEAD`.

Loads two spec trees (git refs or directories), classifies every change on each surface
(HTTP wire, MCP tool surface, generated Python API, LLM-facing text) with the rules in
rules.yaml, applies the reasoned exceptions of HEAD's specs/review-exceptions.yaml and
renders a Markdown report. The verdict follows the compatibility policy: additions are non-breaking;
a breaking change needs a new major version (or /v2) of its service, or an exception.

Developer tooling beside the generator (it reads specs with codegen's loader), loaded only by
`kumitate diff`: the server never imports it.
"""

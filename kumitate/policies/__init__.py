"""Call policies declared in the spec and enforced once, in the pipeline, for every transport.

One home for the idea: `spec` is a tool's or resource's `policy` block as the runtime reads it (parsed
once, frozen; codegen and the generated bindings import it from there), and the other modules are the
mechanisms that block turns on (`auth` and `oauth`, `authguard`, `ratelimit`, `idempotency` with its
store, `deprecation`, `discovery`, `guard`). The pipeline's steps (kumitate.steps, one per concern)
apply them to a call; a step and the mechanism it applies share a name (`steps/ratelimit.py` runs
`policies/ratelimit.py`'s limiter), and nothing but steps lives there.
"""

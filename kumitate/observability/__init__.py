"""What an operator sees of a running server: the log, the metrics, the traces, and the ids tying them together.

`calllog` (one line per event, JSON by default; never a tool's inputs), `tracebacks` (exceptions as the
log shows them: type and frames, never the message), `metrics` (Prometheus, one registry per runtime),
`tracing` (OpenTelemetry spans, off until an OTLP endpoint is set) and `correlation` (the ids read from
the caller or minted, carried on every log line, span and answer).

Nothing is imported here: each module is loaded by whoever needs it, and `tracebacks`, the bottom floor,
is read by `kumitate.faults` without loading the log.
"""

"""Serving one process well: what keeps it up, answering and fair under load, beside the call path.

`kumitate.app` assembles the application and `kumitate.runtime` the services (both stay at the top, the
entry points an operator names: `uvicorn --factory kumitate.app:create_app`); these modules are the
concerns they put in place, one each: `admission` (at most N calls of a service in flight, 503 past that),
`bulkhead` (each service's sync handlers on threads of their own), `threads` (pools whose threads exist
before the first call), `drain` (SIGTERM: leave the balancer, finish what is in flight), `heap` (freed
memory kept for the next large call), `heartbeat` (is the event loop free), `health` (/healthz, /readyz),
`workers` (several processes on one socket) and `deploy` (where shared state lives with more than one).

Nothing is imported here: each module is loaded by whoever needs it, and storage's own thread pool reads
`threads` without pulling the rest of serving in.
"""

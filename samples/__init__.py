"""Deterministic generators of the services' sample data (the demo databases a fresh server starts with).

Data building, not domain logic: a service calls its generator once, on first start, when its data
file is missing; `data/<service>/generate.py` and the tests call the same code. Kept beside the
runtime and the handlers (not inside `handlers/<svc>/`, which holds only domain logic).
"""

"""The runtime's own tables, as SQLAlchemy Core (its migrations create them; its stores query them).

Only the runtime's state lives here (idempotency keys, tasks). A service declares its tables next to its
code (`<handlers>/<service>/store`) and owns their migrations (kumitate.storage.migrate).
"""

from __future__ import annotations

from sqlalchemy import Column, Float, Index, Integer, MetaData, String, Table, Text

__all__ = ["idempotency", "metadata", "tasks"]

metadata = MetaData()

idempotency = Table(
    "idempotency",
    metadata,
    Column("tool", String(200), primary_key=True),
    Column("principal", String(255), primary_key=True),
    Column("key", String(255), primary_key=True),
    Column("fingerprint", String(64), nullable=False),
    Column("status", Integer, nullable=True, comment="NULL while the first call runs (a claim)"),
    Column("body", Text, nullable=True),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False, comment="claim lease while running, then the key's TTL"),
)
Index("idempotency_expiry", idempotency.c.expires_at)

tasks = Table(
    "tasks",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("tool", String(200), nullable=False, comment="service.tool"),
    Column("principal", String(255), nullable=False, comment="who started it: the only caller who may read it"),
    Column("status", String(16), nullable=False, comment="working, input_required, completed, failed or cancelled"),
    Column("progress", Text, nullable=True, comment="JSON {done, total, message}: the latest progress report"),
    Column("questions", Text, nullable=True, comment="JSON {key: question} the task waits on (input_required)"),
    Column("answers", Text, nullable=True, comment="JSON {key: answer} given to those questions, not yet taken"),
    Column(
        "result", Text, nullable=True, comment="JSON body of the outcome (bounded): the result or the error envelope"
    ),
    Column("http_status", Integer, nullable=True),
    Column("run_id", String(100), nullable=False),
    Column("trace_id", String(100), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column(
        "lease_until", Float, nullable=False, comment="renewed while its instance runs it; past it, the task is lost"
    ),
    Column("expires_at", Float, nullable=False, comment="when the finished task is forgotten"),
    comment="long-running tool calls started as tasks (kumitate.tasks)",
)
Index("tasks_expiry", tasks.c.expires_at)

"""Every table of the storage layer, as SQLAlchemy Core (the migrations create them; stores query them)."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Float, Index, Integer, MetaData, String, Table, Text

__all__ = ["analytics_exports", "analytics_views", "attendance_rules", "idempotency", "metadata", "tasks"]

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

attendance_rules = Table(
    "attendance_rules",
    metadata,
    Column("thread_id", String(100), primary_key=True),
    Column("version", BigInteger, primary_key=True, autoincrement=False),
    Column("rule_json", Text, nullable=False, comment="the normalised AttendanceRule, canonical JSON"),
    Column("saved_at", String(40), nullable=False, comment="UTC instant, RFC 3339 with milliseconds"),
    comment="attendance: append-only rule versions per thread; the current rule is the highest version",
)

analytics_exports = Table(
    "analytics_exports",
    metadata,
    Column("handle", String(32), primary_key=True),
    Column("owner", String(255), nullable=False),
    Column("state", String(10), nullable=False, comment="writing (a byte reservation) or ready (the handle exists)"),
    Column("format", String(16), nullable=False),
    Column("mime_type", String(100), nullable=False),
    Column("rows", BigInteger, nullable=False),
    Column("size_bytes", BigInteger, nullable=False, comment="reserved bytes while writing, then the file's size"),
    Column("columns", Text, nullable=False, comment="JSON list of column names"),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False, comment="reservation lease while writing, then the TTL"),
)
Index("analytics_exports_owner", analytics_exports.c.owner, analytics_exports.c.expires_at)
Index("analytics_exports_expiry", analytics_exports.c.expires_at)

analytics_views = Table(
    "analytics_views",
    metadata,
    Column("view", String(64), primary_key=True),
    Column("file", String(255), nullable=False, comment="Parquet file name under <export dir>/views"),
    Column("rows", BigInteger, nullable=False),
    Column("columns", Text, nullable=False, comment="JSON list of column names"),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
)

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

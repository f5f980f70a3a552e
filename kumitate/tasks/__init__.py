"""Long-running tools as tasks (spec `execution: {mode: task}`): started through the pipeline,
answered at once, run on under their own deadline, their state in the storage layer.

store.py holds the rows, runner.py runs the calls, http.py serves the operations (AIP-151),
mcp.py the io.modelcontextprotocol/tasks extension.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kumitate.pipeline import Pipeline
    from kumitate.settings import Settings
    from kumitate.storage import Database
    from kumitate.tasks.runner import TaskRunner


def task_runner(pipeline: Pipeline, db: Database, settings: Settings) -> TaskRunner:
    """The runtime's task runner, on its database, with the KUMITATE_TASK_* settings."""
    from kumitate.errors import ErrorCode, ToolError
    from kumitate.tasks.runner import TaskRunner
    from kumitate.tasks.store import TaskStore

    def envelope(code: ErrorCode, message: str, run_id: str, trace_id: str) -> tuple[int, dict[str, object]]:
        outcome = pipeline.error_outcome(ToolError(message, code=code), run_id, trace_id)
        return outcome.status, outcome.body

    store = TaskStore(db, envelope, lease_s=settings.task_lease_ms / 1000, ttl_s=settings.task_ttl_s)
    return TaskRunner(pipeline, store, workers=settings.task_workers, max_result_bytes=settings.task_max_result_bytes)

"""household: 家計簿 analysis over MoneyForward ME CSV exports (seed 003).

The thin adapter between the generated models / CallContext and the domain core
(service.HouseholdCore). Tool inputs are never logged: they can hold a
person's spending.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kumitate.context import Attachment, CallContext
from kumitate.settings import Settings

from . import clarify
from .dupstore import MAX_STORED_CANDIDATES
from .service import ADMIN_SCOPES, HouseholdCore, Result

if TYPE_CHECKING:  # generated later by the lead's codegen
    from pydantic import BaseModel

SERVICE = "household"


def _args(model: BaseModel | dict[str, Any] | None) -> dict[str, Any]:
    if model is None:
        return {}
    if isinstance(model, dict):
        return {k: v for k, v in model.items() if v is not None}
    return model.model_dump(mode="json", exclude_none=True)


def _with_extras(result: Result, ctx: CallContext) -> dict[str, Any]:
    if result.png is not None:
        ctx.attachments.append(Attachment("image/png", result.png))
    ctx.warnings.extend(result.warnings)
    return result.data


class HouseholdHandlers:
    """One method per tool and per resource of specs/household."""

    def __init__(self, core: HouseholdCore) -> None:
        self.core = core

    # tools
    def import_household_data(self, input: Any, ctx: CallContext) -> dict[str, Any]:
        return self.core.import_data()

    def get_monthly_household(self, input: Any, ctx: CallContext) -> dict[str, Any]:
        return _with_extras(self.core.monthly_household(_args(input), ctx.principal.id), ctx)

    def get_category_trend(self, input: Any, ctx: CallContext) -> dict[str, Any]:
        trend = partial(self.core.category_trend, owner=ctx.principal.id)
        return _with_extras(clarify.retrying_category(ctx, _args(input), trend), ctx)

    def detect_duplicates(self, input: Any, ctx: CallContext) -> dict[str, Any]:
        return _with_extras(self.core.detect_duplicates(_args(input)), ctx)

    def list_duplicate_candidates(self, input: Any, ctx: CallContext) -> dict[str, Any]:
        return self.core.list_duplicate_candidates(_args(input))

    def get_duplicate_candidate_detail(self, input: Any, ctx: CallContext) -> dict[str, Any]:
        return self.core.get_duplicate_candidate_detail(_args(input))

    def confirm_duplicate(self, input: Any, ctx: CallContext) -> dict[str, Any]:
        return self.core.confirm_duplicate(_args(input))

    def restore_duplicate(self, input: Any, ctx: CallContext) -> dict[str, Any]:
        return self.core.restore_duplicate(_args(input))

    def get_duplicate_stats(self, input: Any, ctx: CallContext) -> dict[str, Any]:
        return self.core.get_duplicate_stats()

    # resources
    def read_category_hierarchy(self, ctx: CallContext) -> dict[str, Any]:
        return self.core.category_hierarchy()

    def read_available_months(self, ctx: CallContext) -> dict[str, Any]:
        return self.core.available_months()

    def read_category_trend_summary(self, ctx: CallContext) -> dict[str, Any]:
        return self.core.category_trend_summary()

    def read_chart(self, ctx: CallContext, chart_id: str) -> bytes:
        return self.core.chart_png(chart_id, ctx.principal.id, ctx.principal.scopes)

    def read_category(self, ctx: CallContext, category: str) -> dict[str, Any]:
        return self.core.category_info(category)

    def read_month(self, ctx: CallContext, month: str) -> dict[str, Any]:
        return self.core.month_summary(month)

    # completions (the `completions:` of specs/household/resources/)
    def complete_months(self, ctx: CallContext, prefix: str, arguments: dict[str, str]) -> list[str]:
        return self.core.month_labels(prefix)

    def complete_category_names(self, ctx: CallContext, prefix: str, arguments: dict[str, str]) -> list[str]:
        return self.core.category_names(prefix)

    def complete_chart_ids(self, ctx: CallContext, prefix: str, arguments: dict[str, str]) -> list[str]:
        """The caller's live charts (everyone's for admin): the ids it could read."""
        every = bool(ctx.principal.scopes & ADMIN_SCOPES)
        return self.core.charts.ids(ctx.principal.id, prefix, every=every)


TRUE_VALUES = ("1", "true", "yes", "on")


def data_dirs(settings: Settings, env: dict[str, str] | None = None) -> list[Path]:
    """Every directory in HOUSEHOLD_DATA_DIR (os.pathsep-separated); the bundled samples only without it.

    With HOUSEHOLD_DATA_DIR set, the samples are left out (and sample rows already stored are removed on the
    next import) so that a user's real exports never mix with them; HOUSEHOLD_INCLUDE_SAMPLES=1 keeps them.
    """
    env = dict(os.environ) if env is None else env
    extra = [Path(p).expanduser() for p in env.get("HOUSEHOLD_DATA_DIR", "").split(os.pathsep) if p.strip()]
    keep_samples = not extra or env.get("HOUSEHOLD_INCLUDE_SAMPLES", "").strip().lower() in TRUE_VALUES
    return [settings.sample_dir / SERVICE, *extra] if keep_samples else extra


def create(settings: Settings, env: dict[str, str] | None = None) -> HouseholdHandlers:
    """Open (or create) var/household/household.db and import every export found; fast on later starts."""
    env = dict(os.environ) if env is None else env
    ttl = float(env.get("HOUSEHOLD_CHART_TTL_SECONDS", "3600"))
    max_candidates = int(env.get("HOUSEHOLD_MAX_CANDIDATES", str(MAX_STORED_CANDIDATES)))
    core = HouseholdCore(
        settings.service_dir(SERVICE),
        data_dirs(settings, env),
        settings.public_base_url,
        chart_ttl_seconds=ttl,
        sample_dir=settings.sample_dir / SERVICE,
        max_candidates=max_candidates,
    )
    return HouseholdHandlers(core)

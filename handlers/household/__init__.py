"""household: 家計簿 analysis over MoneyForward ME CSV exports (seed 003).

The thin adapter between the generated models / CallContext and the domain code: it takes each
tool's generated input model, calls the core (service.HouseholdCore, dupstore) with plain typed
arguments, and returns the tool's generated output model; failures are generated error classes
(problems.py). Tool inputs are never logged: they can hold a person's spending.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from generated.household import models
from kumitate.cache import RedisCache, SharedCache
from kumitate.context import Attachment, CallContext
from kumitate.deploy import DeploySettings
from kumitate.service import ServiceSetup
from kumitate.settings import Settings
from kumitate.storage import Database, open_database
from kumitate.storage import redis as shared_redis

from . import clarify, dupstore, monthly, trend_report
from .chartout import ChartRequest, Result
from .duplicates import Options
from .dupstore import MAX_STORED_CANDIDATES
from .service import ADMIN_SCOPES, HouseholdCore

SERVICE = "household"


def _chart(input: models.GetMonthlyHouseholdInput | models.GetCategoryTrendInput) -> ChartRequest | None:
    """The chart asked for, or None for a text answer."""
    if input.output_format is None or input.output_format.value != "image":
        return None
    return ChartRequest(input.graph_type.value if input.graph_type else None, input.image_size)


def _with_extras(result: Result, ctx: CallContext) -> dict[str, Any]:
    if result.png is not None:
        ctx.attachments.append(Attachment("image/png", result.png))
    ctx.warnings.extend(result.warnings)
    return result.data


class HouseholdHandlers:
    """One method per tool and per resource of specs/household, named as the tool."""

    def __init__(self, core: HouseholdCore, owned: list[Any] | None = None) -> None:
        self.core = core
        self._owned = owned or []

    def close(self) -> None:
        """Release the database and Redis connections this service opened itself (not those it was given)."""
        while self._owned:
            self._owned.pop().close()

    # tools
    def import_household_data(
        self, input: models.ImportHouseholdDataInput, ctx: CallContext
    ) -> models.ImportHouseholdDataOutput:
        return models.ImportHouseholdDataOutput.model_validate(self.core.import_data())

    def get_monthly_household(
        self, input: models.GetMonthlyHouseholdInput, ctx: CallContext
    ) -> models.GetMonthlyHouseholdOutput:
        result = monthly.get_monthly_household(self.core, input.year, input.month, _chart(input), ctx.principal.id)
        return models.GetMonthlyHouseholdOutput.model_validate(_with_extras(result, ctx))

    def get_category_trend(
        self, input: models.GetCategoryTrendInput, ctx: CallContext
    ) -> models.GetCategoryTrendOutput:
        def trend(category: str | None) -> Result:
            return trend_report.get_category_trend(
                self.core, category, input.start_month, input.end_month, _chart(input), ctx.principal.id
            )

        result = clarify.retrying_category(ctx, input.category, trend)
        return models.GetCategoryTrendOutput.model_validate(_with_extras(result, ctx))

    def detect_duplicates(self, input: models.DetectDuplicatesInput, ctx: CallContext) -> models.DetectDuplicatesOutput:
        opts = Options(
            date_tolerance_days=input.date_tolerance_days,
            amount_tolerance_abs=input.amount_tolerance_abs,
            amount_tolerance_pct=input.amount_tolerance_pct,
            min_similarity_score=input.min_similarity_score,
        )
        ids = [i.root for i in input.transaction_ids] if input.transaction_ids else None
        result = self.core.detect_duplicates(opts, ids)
        return models.DetectDuplicatesOutput.model_validate(_with_extras(result, ctx))

    def list_duplicate_candidates(
        self, input: models.ListDuplicateCandidatesInput, ctx: CallContext
    ) -> models.ListDuplicateCandidatesOutput:
        listed = dupstore.list_candidates(self.core.store, input.limit, input.skip_checked)
        return models.ListDuplicateCandidatesOutput.model_validate(listed)

    def get_duplicate_candidate_detail(
        self, input: models.GetDuplicateCandidateDetailInput, ctx: CallContext
    ) -> models.GetDuplicateCandidateDetailOutput:
        detail = dupstore.detail(self.core.store, input.check_id)
        return models.GetDuplicateCandidateDetailOutput.model_validate(detail)

    def confirm_duplicate(self, input: models.ConfirmDuplicateInput, ctx: CallContext) -> models.ConfirmDuplicateOutput:
        confirmed = dupstore.confirm(self.core.store, input.check_id, input.decision.value)
        return models.ConfirmDuplicateOutput.model_validate(confirmed)

    def restore_duplicate(self, input: models.RestoreDuplicateInput, ctx: CallContext) -> models.RestoreDuplicateOutput:
        return models.RestoreDuplicateOutput.model_validate(dupstore.restore(self.core.store, input.transaction_id))

    def get_duplicate_stats(
        self, input: models.GetDuplicateStatsInput, ctx: CallContext
    ) -> models.GetDuplicateStatsOutput:
        return models.GetDuplicateStatsOutput.model_validate(dupstore.stats(self.core.store))

    # resources
    def read_category_hierarchy(self, ctx: CallContext) -> models.CategoryHierarchyResource:
        return models.CategoryHierarchyResource.model_validate(self.core.category_hierarchy())

    def read_available_months(self, ctx: CallContext) -> models.AvailableMonthsResource:
        return models.AvailableMonthsResource.model_validate(self.core.available_months())

    def read_category_trend_summary(self, ctx: CallContext) -> models.CategoryTrendSummaryResource:
        return models.CategoryTrendSummaryResource.model_validate(trend_report.category_trend_summary(self.core))

    def read_chart(self, ctx: CallContext, chart_id: str) -> bytes:
        return self.core.chart_png(chart_id, ctx.principal.id, ctx.principal.scopes)

    def read_category(self, ctx: CallContext, category: str) -> models.CategoryInfo:
        return models.CategoryInfo.model_validate(self.core.category_info(category))

    def read_month(self, ctx: CallContext, month: str) -> models.MonthSummary:
        return models.MonthSummary.model_validate(self.core.month_summary(month))

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


def create(setup: ServiceSetup) -> HouseholdHandlers:
    """The service on the runtime's database and shared cache."""
    return build(
        setup.settings, dict(setup.settings.env), database=setup.database, shared=setup.cache if setup.shared else None
    )


def build(
    settings: Settings,
    env: dict[str, str] | None = None,
    *,
    database: Database | None = None,
    shared: SharedCache | None = None,
) -> HouseholdHandlers:
    """Open the storage layer's database (KUMITATE_DATABASE_URL, else var/kumitate.sqlite3) and, with
    KUMITATE_REDIS_URL, the shared chart cache, unless they are given; copy a household.db of an earlier
    release into the database once, and import every export found."""
    env = dict(os.environ) if env is None else env
    ttl = float(env.get("HOUSEHOLD_CHART_TTL_SECONDS", "3600"))
    max_candidates = int(env.get("HOUSEHOLD_MAX_CANDIDATES", str(MAX_STORED_CANDIDATES)))
    deploy = DeploySettings.from_env(env)
    owned: list[Any] = []
    if database is None:
        database = open_database(settings.data_dir, deploy)
        owned.append(database)
    if shared is None and deploy.redis_url:
        client = shared_redis.connect(deploy.redis_url)
        owned.append(client)
        shared = RedisCache(client)
    core = HouseholdCore(
        database,
        settings.service_dir(SERVICE),
        data_dirs(settings, env),
        settings.public_base_url,
        chart_ttl_seconds=ttl,
        sample_dir=settings.sample_dir / SERVICE,
        max_candidates=max_candidates,
        shared=shared,
    )
    return HouseholdHandlers(core, owned)

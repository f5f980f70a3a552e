"""household: 家計簿 analysis over MoneyForward ME CSV exports (seed 003).

The thin adapter between the generated models / CallContext and the domain code: it takes each
tool's generated input model, calls the domain (core/: core.service.HouseholdCore and one module
per tool) or the stored duplicate checks (store.checks) with plain typed arguments, and returns the
generated output model they build (a chart's PNG and warnings go to the call beside it);
failures are generated error classes (problems.py). Tool inputs are never logged: they can hold
a person's spending.

Layout: settings.py (every variable household reads), store/ (its tables and queries on the
runtime's database), core/ (the domain, which uses store/ and never the other way round), and what
both use: problems.py (the catalogued failures), months.py (month arithmetic), records.py (typed records),
and generated.household.models (the specs' types, which core/ and store/ build their answers in).
"""

from __future__ import annotations

from generated.household import models
from kumitate.context import Attachment, CallContext
from kumitate.service import ServiceSetup

from .core import clarify, monthly, trend_report
from .core.chartout import ChartRequest, Output, Result
from .core.service import ADMIN_SCOPES, HouseholdCore
from .records import Options
from .settings import HouseholdSettings
from .store import checks


def _chart(input: models.GetMonthlyHouseholdInput | models.GetCategoryTrendInput) -> ChartRequest | None:
    """The chart asked for, or None for a text answer."""
    if input.output_format is None or input.output_format.value != "image":
        return None
    return ChartRequest(input.graph_type.value if input.graph_type else None, input.image_size)


def _with_extras(result: Result[Output], ctx: CallContext) -> Output:
    """The tool's output; its chart and warnings go to the call, which the transport adds beside it."""
    if result.png is not None:
        ctx.attachments.append(Attachment("image/png", result.png))
    ctx.warnings.extend(result.warnings)
    return result.data


class HouseholdHandlers:
    """One method per tool and per resource of specs/household, named as the tool."""

    def __init__(self, core: HouseholdCore) -> None:
        self.core = core

    # tools
    def import_household_data(
        self, input: models.ImportHouseholdDataInput, ctx: CallContext
    ) -> models.ImportHouseholdDataOutput:
        return self.core.import_data()

    def get_monthly_household(
        self, input: models.GetMonthlyHouseholdInput, ctx: CallContext
    ) -> models.GetMonthlyHouseholdOutput:
        result = monthly.get_monthly_household(self.core, input.year, input.month, _chart(input), ctx.principal.id)
        return _with_extras(result, ctx)

    def get_category_trend(
        self, input: models.GetCategoryTrendInput, ctx: CallContext
    ) -> models.GetCategoryTrendOutput:
        def trend(category: str | None) -> Result[models.CategoryTrend]:
            return trend_report.get_category_trend(
                self.core, category, input.start_month, input.end_month, _chart(input), ctx.principal.id
            )

        result = clarify.retrying_category(ctx, input.category, trend)
        return _with_extras(result, ctx)

    def detect_duplicates(self, input: models.DetectDuplicatesInput, ctx: CallContext) -> models.DetectDuplicatesOutput:
        opts = Options(
            date_tolerance_days=input.date_tolerance_days,
            amount_tolerance_abs=input.amount_tolerance_abs,
            amount_tolerance_pct=input.amount_tolerance_pct,
            min_similarity_score=input.min_similarity_score,
        )
        ids = [i.root for i in input.transaction_ids] if input.transaction_ids else None
        return _with_extras(self.core.detect_duplicates(opts, ids), ctx)

    def list_duplicate_candidates(
        self, input: models.ListDuplicateCandidatesInput, ctx: CallContext
    ) -> models.ListDuplicateCandidatesOutput:
        return checks.list_candidates(self.core.store, input.limit, input.skip_checked)

    def get_duplicate_candidate_detail(
        self, input: models.GetDuplicateCandidateDetailInput, ctx: CallContext
    ) -> models.GetDuplicateCandidateDetailOutput:
        return checks.detail(self.core.store, input.check_id)

    def confirm_duplicate(self, input: models.ConfirmDuplicateInput, ctx: CallContext) -> models.ConfirmDuplicateOutput:
        return checks.confirm(self.core.store, input.check_id, input.decision.value)

    def restore_duplicate(self, input: models.RestoreDuplicateInput, ctx: CallContext) -> models.RestoreDuplicateOutput:
        return checks.restore(self.core.store, input.transaction_id)

    def get_duplicate_stats(
        self, input: models.GetDuplicateStatsInput, ctx: CallContext
    ) -> models.GetDuplicateStatsOutput:
        return checks.stats(self.core.store)

    # resources
    def read_category_hierarchy(self, ctx: CallContext) -> models.CategoryHierarchyResource:
        return models.CategoryHierarchy(self.core.category_hierarchy())

    def read_available_months(self, ctx: CallContext) -> models.AvailableMonthsResource:
        return self.core.available_months()

    def read_category_trend_summary(self, ctx: CallContext) -> models.CategoryTrendSummaryResource:
        return trend_report.category_trend_summary(self.core)

    def read_chart(self, ctx: CallContext, chart_id: str) -> bytes:
        return self.core.chart_png(chart_id, ctx.principal.id, ctx.principal.scopes)

    def read_category(self, ctx: CallContext, category: str) -> models.CategoryInfo:
        return self.core.category_info(category)

    def read_month(self, ctx: CallContext, month: str) -> models.MonthSummary:
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


def create(setup: ServiceSetup) -> HouseholdHandlers:
    """The service on the runtime's database and shared cache (it closes neither: their owner does).

    Copies a household.db of an earlier release into the database once, and imports every export found.
    """
    core = HouseholdCore(setup.database, setup.cache, setup.data_dir, setup.sample_dir, setup.read(HouseholdSettings))
    return HouseholdHandlers(core)

"""The API's answers are built as TypedDict views (``punctual_functions/api/views.py``, what mypy checks) and
documented by the ``*Out`` models (``punctual_functions/api/responses.py``, what the OpenAPI document says):
the two must name the same fields, or the document describes an answer the API does not give."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from pydantic import BaseModel

from punctual_functions.api import calendar_views, limit_views, responses, trail, views

# Each answer model and the view the route functions build for it.
PAIRS: dict[type[BaseModel], Any] = {
    responses.ScheduleTimesOut: views.ScheduleTimesView,
    responses.ScheduleOut: views.ScheduleView,
    responses.RetryOut: views.RetryView,
    responses.AlertsOut: views.AlertsView,
    responses.PauseOut: views.PauseView,
    responses.RunSummaryOut: views.RunSummaryView,
    responses.JobOut: views.JobView,
    responses.AttemptOut: views.AttemptView,
    responses.RunOut: views.RunView,
    responses.JobPage: views.JobPageView,
    responses.RunPage: views.RunPageView,
    responses.QueueStats: views.QueueStatsView,
    responses.StatsOut: views.StatsView,
    responses.CreatedJobOut: views.CreatedJobView,
    responses.CreatedJobsOut: views.CreatedJobsView,
    responses.BulkItemOut: views.BulkItemView,
    responses.BulkOut: views.BulkView,
    responses.BackfillOut: views.BackfillView,
    responses.DstOut: views.DstView,
    responses.FireTimeOut: views.FireTimeView,
    responses.PreviewExcludedDayOut: views.PreviewExcludedDayView,
    responses.PreviewCalendarOut: views.PreviewCalendarView,
    responses.MissedOut: views.MissedView,
    responses.OutageOut: views.OutageView,
    responses.PreviewOut: views.PreviewView,
    responses.HolidaySourceOut: calendar_views.HolidaySourceView,
    responses.CalendarOut: calendar_views.CalendarView,
    responses.CalendarPage: calendar_views.CalendarPageView,
    responses.ExcludedDayOut: calendar_views.ExcludedDayView,
    responses.CalendarDaysOut: calendar_views.CalendarDaysView,
    responses.ChangeOut: trail.ChangeView,
    responses.ChangePage: trail.ChangePageView,
    responses.VersionsCompared: trail.VersionsComparedView,
    responses.LimitSlotOut: limit_views.LimitSlotView,
    responses.LimitWaiterOut: limit_views.LimitWaiterView,
    responses.LimitOut: limit_views.LimitView,
    responses.LimitPage: limit_views.LimitPageView,
}
# Refusals are ApiError.body(), not a view.
WITHOUT_VIEW = {responses.ErrorOut}


def wire_names(model: type[BaseModel]) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


def keys(view: Any) -> set[str]:
    return set(view.__required_keys__ | view.__optional_keys__)


@pytest.mark.parametrize(("model", "view"), PAIRS.items(), ids=[model.__name__ for model in PAIRS])
def test_a_view_and_its_answer_model_name_the_same_fields(model: type[BaseModel], view: Any) -> None:
    assert keys(view) == wire_names(model), f"{view.__name__} and {model.__name__} disagree"


@pytest.mark.parametrize(("model", "view"), PAIRS.items(), ids=[model.__name__ for model in PAIRS])
def test_a_field_a_view_may_leave_out_is_not_required_by_its_model(model: type[BaseModel], view: Any) -> None:
    required = {field.alias or name for name, field in model.model_fields.items() if field.is_required()}
    assert not set(view.__optional_keys__) & required, f"{model.__name__} requires what {view.__name__} omits"


def test_every_answer_model_has_its_view() -> None:
    models = {
        model
        for _, model in inspect.getmembers(responses, inspect.isclass)
        if issubclass(model, responses.Answer) and model is not responses.Answer
    }
    assert models - WITHOUT_VIEW == set(PAIRS)


def test_a_run_not_yet_written_answers_a_part_of_a_run() -> None:
    assert keys(views.PendingRunView) < wire_names(responses.RunOut)

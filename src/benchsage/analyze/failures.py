"""Tests whose trials failed: said first, never left out of the answer.

A test with no successful trial has no value to analyse, so the order analysis never sees it;
its outcomes (store/outcomes.py) still give it a row in the analysis (status "failed", every
statistic None) and a FailedTest that the verdict names before anything else.
"""

from __future__ import annotations

from typing import Sequence

from benchsage.analyze.verdict import FailedTest, TestVerdict
from benchsage.store.outcomes import TestOutcomes
from benchsage.store.table import TrialTable
from benchsage.vocabulary import FAILED, HARNESS_METRICS

PRIMARY_BY_DEFAULT = HARNESS_METRICS[0]  # wall_time: the metric of a test that declares none


def failed_tests(outcomes: Sequence[TestOutcomes]) -> tuple[FailedTest, ...]:
    """Each test with a trial that did not succeed, in test order."""
    return tuple(FailedTest(o.test, o.failed, o.trials, o.statuses, o.reason, o.output_tail) for o in outcomes if o.failed)


def with_failed_rows(rows: Sequence[TestVerdict], table: TrialTable) -> tuple[TestVerdict, ...]:
    """The analysis's rows with a row for each primary metric of every test that has trials but
    no successful one (status "failed", statistics None), each in its test's place."""
    analysed = {v.test for v in rows}
    missing = [o for o in table.outcomes if o.trials and o.failed == o.trials and o.test not in analysed]
    if not missing:
        return tuple(rows)
    added = []
    for o in missing:
        for metric in o.primary or (PRIMARY_BY_DEFAULT,):
            info = table.metric_info(metric)
            added.append(TestVerdict(
                test=o.test, metric=metric, primary=True, n_fixed=0, n_random=0, kw_h=None, kw_p=None, p_adjusted=None,
                significant=None, eta2=None, delta_pct=None, cv_fixed=None, cv_random=None, mean_fixed=None, mean_random=None,
                median_fixed=None, ci_fixed=None, median_random=None, ci_random=None, ci_case=None, unit=info.unit,
                better=info.better, status=FAILED,
            ))
    place = {name: i for i, name in enumerate(table.test_names)}
    place.update({o.test: place.get(o.test, len(place)) for o in table.outcomes})
    return tuple(sorted([*rows, *added], key=lambda v: place.get(v.test, len(place))))

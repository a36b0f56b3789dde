"""The experiment as the user wrote it: a TOML spec read into frozen, validated values.

model.py holds the values, fields.py the readers of TOML keys, load.py the spec as a whole,
treatments.py its contexts, observer levels, factors and comparisons, sweeps.py its sweeps.
Nothing here runs an experiment or knows how one is planned.
"""

from benchsage.spec.load import check_files, load_spec, missing_files, read_spec_text
from benchsage.spec.model import (CollectorSpec, CompareSpec, ContextSpec, FactorSpec, LinkOrder, MetricSpec, ObserverSpec, ResetSpec, InitSpec,
                                  ResetStep, Spec, SweepSpec, TestSpec, Treatments, WorkerSpec)

__all__ = ["CollectorSpec", "CompareSpec", "ContextSpec", "FactorSpec", "LinkOrder", "MetricSpec", "ObserverSpec", "ResetSpec", "InitSpec",
           "ResetStep", "Spec", "SweepSpec", "TestSpec", "Treatments", "WorkerSpec", "check_files", "load_spec", "missing_files",
           "read_spec_text"]

"""`benchsage bisect`: the commit of a range that first changed a metric (search.py drives it)."""

from benchsage.execute.bisect.search import BisectRequest, plan_bisect, resume_bisect, start_bisect

__all__ = ["BisectRequest", "plan_bisect", "resume_bisect", "start_bisect"]

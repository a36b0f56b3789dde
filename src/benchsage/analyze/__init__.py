"""Apply the statistics to a trial table and produce typed results.

Calling the package (`benchsage.analyze(source, ...)`) is the notebook API, benchsage.api.analyze:
the package root makes it callable.
"""

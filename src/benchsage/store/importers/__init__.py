"""Importers: turn existing results (benchsage experiments, tidy CSV, OrderSage CSV) into TrialTables.

One file per format behind the `Importer` interface of base.py; detect.py picks the importer
for each source (`--format auto`) and combines several sources into one table.
"""

from benchsage.store.importers.base import Importer
from benchsage.store.importers.detect import FORMATS, IMPORTERS, load_source, load_sources
from benchsage.store.importers.ordersage import read_ordersage
from benchsage.store.importers.tidy import read_tidy

__all__ = ["FORMATS", "IMPORTERS", "Importer", "load_source", "load_sources", "read_ordersage", "read_tidy"]

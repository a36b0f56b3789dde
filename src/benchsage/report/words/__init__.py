"""Every word the analysis's results are said in: the verdict, the notes on test rows, the
warnings, the diagnostics' details and the methods. The analysis gives facts (numbers, names,
kinds of note); these modules compose the sentences the terminal, the HTML report, the JSON and
the notebook API show, one function per kind (registry.py).
"""

from benchsage.report.words import diagnostics  # noqa: F401  (registers the diagnostics' words)
from benchsage.report.words import notes as _notes  # noqa: F401 - registers the words of each note
from benchsage.report.words import treatments as _treatments  # noqa: F401  (registers the treatment notes' words)
from benchsage.report.words.comparisons import comparison_sentence
from benchsage.report.words.registry import said, say, words
from benchsage.report.words.verdict import verdict_sentence, workers_sentence

__all__ = ["comparison_sentence", "said", "say", "verdict_sentence", "words", "workers_sentence"]

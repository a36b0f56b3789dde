"""benchsage: performance experiments that survive the ordering trap.

Runs every test in a fixed order and in fresh random orders, interleaved, with a reset before
every run and every trial journaled, then says with statistics whether the order mattered.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]

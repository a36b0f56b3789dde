"""benchsage's agent: the program that spawns and measures trials on every host.

Stdlib only and Python 3.8+, and nothing of benchsage but the vocabulary: this folder and
vocabulary.py are the bundle the controller sends over a transport's stdin (execute/bundle.py),
so nothing is installed on a host. Its modules stay small in memory: a trial forked from the
agent starts with the agent's resident pages, which are the floor of the trial's max_rss.
"""

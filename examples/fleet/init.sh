#!/bin/sh
# The experiment's [init]: run once on every host after the deploy, before its first run, in
# the deployed copy of this folder. It makes what the tests need and the repository does not
# hold: here the corpus the compress test reads (1 MiB, the same bytes on every host).
set -eu
mkdir -p data
python3 - <<'PY'
import random
corpus = random.Random(2026).choices(b"abcdefghij klmnopqrstuvwxyz\n", k=1 << 20)
with open("data/corpus.tmp", "wb") as fh:
    fh.write(bytes(corpus))
PY
mv data/corpus.tmp data/corpus.bin
echo "corpus ready on $(hostname): $(wc -c < data/corpus.bin) bytes"

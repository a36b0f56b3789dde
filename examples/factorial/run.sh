#!/bin/sh
# One sysbench test at the factor levels benchsage exports to it:
#   THREADS  1 or 2: sysbench's worker threads
#   PIN      off: the threads may run on any CPU; on: all of them on one CPU (the first this
#            process may use), as taskset would pin a benchmark
#
#   THREADS=2 PIN=on sh run.sh cpu      # or memory
set -eu
threads=${THREADS:-1}
pin=""
if [ "${PIN:-off}" = on ]; then
    cpu=$(taskset -cp $$ | sed 's/.*: //; s/[,-].*//')
    pin="taskset -c $cpu"
fi
case ${1:-} in
    cpu) exec $pin sysbench cpu --threads="$threads" --time=0 --events=500 --cpu-max-prime=10000 run ;;
    memory) exec $pin sysbench memory --threads="$threads" --time=0 --memory-total-size=2G run ;;
    *) echo "usage: sh run.sh cpu|memory" >&2; exit 2 ;;
esac

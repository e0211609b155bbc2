#!/bin/sh
# Runs the example job named by CHUNKLOCK_JOB. On the first attempt at
# $PAUSE_AT (job/dataid) it first records its own pid, its runner's pid and
# its executor in $PAUSE_DIR/started, and waits until $PAUSE_DIR/go exists:
# the test picks that moment to kill the runner.
if [ "$CHUNKLOCK_JOB/$CHUNKLOCK_DATAID" = "${PAUSE_AT:-}" ] && [ "$CHUNKLOCK_ATTEMPT" = 1 ]; then
	echo "$$ $PPID $CHUNKLOCK_EXECUTOR" >"$PAUSE_DIR/started.tmp"
	mv "$PAUSE_DIR/started.tmp" "$PAUSE_DIR/started"
	while [ ! -e "$PAUSE_DIR/go" ]; do sleep 0.05; done
fi
exec "$EXAMPLE_DIR/jobs/$CHUNKLOCK_JOB.sh"

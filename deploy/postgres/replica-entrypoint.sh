#!/bin/sh
# The read replica: on first start, a copy of the primary made by pg_basebackup, whose -R makes it
# start as a streaming standby of the primary; then Postgres, read-only. Runs as postgres.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  until pg_isready -q -h "$PRIMARY_HOST" -U replicator -d postgres; do sleep 1; done
  pg_basebackup -h "$PRIMARY_HOST" -U replicator -D "$PGDATA" -R -X stream -c fast
  chmod 700 "$PGDATA"
fi
# hot_standby_feedback: discovery's queries here are not cancelled by the primary's vacuum.
exec postgres -c hot_standby=on -c hot_standby_feedback=on

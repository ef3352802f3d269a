#!/bin/sh
# Run once by the postgres image when it creates the primary's database (docker-entrypoint-initdb.d):
# a role for the replica's streaming replication, allowed in by password from any address.
set -eu
psql -v ON_ERROR_STOP=1 -v password="$REPLICATION_PASSWORD" --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<'SQL'
create role replicator with replication login password :'password';
SQL
echo "host replication replicator all scram-sha-256" >>"$PGDATA/pg_hba.conf"

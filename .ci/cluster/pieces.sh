# The pieces of the cluster test, sourced by .ci/cluster/run: a Postgres primary and a streaming
# standby, a Redis, two registry replicas (the compiled build) and nginx in front, all on this
# machine's Debian packages, on ports of their own, under one temporary directory.
# shellcheck shell=bash

PG_BIN=${CLUSTER_PG_BIN:-/usr/lib/postgresql/15/bin}
PRIMARY_PORT=${CLUSTER_PRIMARY_PORT:-55432}
STANDBY_PORT=${CLUSTER_STANDBY_PORT:-55433}
REDIS_PORT=${CLUSTER_REDIS_PORT:-55479}
NGINX_HTTP_PORT=${CLUSTER_NGINX_HTTP_PORT:-55480}
NGINX_GRPC_PORT=${CLUSTER_NGINX_GRPC_PORT:-55481}
REGISTRY_PORTS=("${CLUSTER_REGISTRY_A_PORT:-55482}" "${CLUSTER_REGISTRY_B_PORT:-55483}")
# Low, so that one burst is quickly spent and two would show: the shared-limit test counts them.
RATE_LIMIT_RPS=1
RATE_LIMIT_BURST=30

PRIMARY_URL="postgres://postgres@127.0.0.1:${PRIMARY_PORT}/registry"
STANDBY_URL="postgres://postgres@127.0.0.1:${STANDBY_PORT}/registry"
REDIS_URL="redis://127.0.0.1:${REDIS_PORT}"
NGINX_URL="http://127.0.0.1:${NGINX_HTTP_PORT}"

CLUSTER_DIR=""
# What was started, for the teardown and for the logs printed on failure: "name log".
PIECES=()
# Processes started in the background: the pid of each, by name.
declare -A PIDS=()
REGISTRY_PIDS=()

say() { printf '[cluster] %s\n' "$*"; }

# Runs "$@" every 0.2 s until it succeeds, for at most $1 seconds.
wait_until() {
  local seconds=$1 what=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      say "$what: not ready after ${seconds} s"
      return 1
    fi
    sleep 0.2
  done
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

cluster_init() {
  local port
  for port in "$PRIMARY_PORT" "$STANDBY_PORT" "$REDIS_PORT" "$NGINX_HTTP_PORT" "$NGINX_GRPC_PORT" "${REGISTRY_PORTS[@]}"; do
    if port_in_use "$port"; then
      say "port $port is taken: is another cluster running? (ports: CLUSTER_*_PORT)"
      return 1
    fi
  done
  CLUSTER_DIR=$(mktemp -d /tmp/registry-cluster.XXXXXX)
  # Postgres runs as postgres and nginx as nobody: both must reach their directories in here.
  chmod 755 "$CLUSTER_DIR"
  mkdir -m 1777 "$CLUSTER_DIR/logs"
}

ensure_packages() {
  local missing=()
  command -v nginx >/dev/null 2>&1 || missing+=(nginx)
  command -v envsubst >/dev/null 2>&1 || missing+=(gettext-base)
  [ -x "$PG_BIN/pg_basebackup" ] || missing+=(postgresql-15)
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
  ((${#missing[@]} == 0)) && return 0
  say "installing ${missing[*]} with apt-get"
  apt-get update >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
}

psql_at() { # port, then psql arguments; as the superuser, on the registry database
  local port=$1
  shift
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d registry "$@"
}

pg_ctl_as_postgres() { runuser -u postgres -- "$PG_BIN/pg_ctl" "$@"; }

start_postgres_primary() {
  local data="$CLUSTER_DIR/primary"
  install -d -o postgres -g postgres -m 700 "$data" "$CLUSTER_DIR/sockets"
  runuser -u postgres -- "$PG_BIN/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C \
    --no-sync --no-instructions >"$CLUSTER_DIR/logs/initdb.log" 2>&1
  # initdb's pg_hba.conf already lets local and loopback connections replicate with trust.
  cat >>"$data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PRIMARY_PORT
unix_socket_directories = '$CLUSTER_DIR/sockets'
wal_level = replica
max_wal_senders = 4
wal_keep_size = '128MB'
# A test cluster: a crash of the machine need not be survived.
fsync = off
EOF
  PIECES+=("postgres-primary $CLUSTER_DIR/logs/postgres-primary.log")
  pg_ctl_as_postgres -D "$data" -l "$CLUSTER_DIR/logs/postgres-primary.log" -w -t 30 start >/dev/null
  "$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres -d postgres -c "create database registry"
}

start_postgres_standby() {
  local data="$CLUSTER_DIR/standby"
  install -d -o postgres -g postgres -m 700 "$data"
  # -R writes standby.signal and primary_conninfo: the copy starts as a streaming replica.
  runuser -u postgres -- "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres \
    -D "$data" -R -X stream -c fast --no-sync
  cat >>"$data/postgresql.conf" <<EOF
port = $STANDBY_PORT
hot_standby = on
# Discovery queries are not cancelled by the primary's vacuum.
hot_standby_feedback = on
EOF
  PIECES+=("postgres-standby $CLUSTER_DIR/logs/postgres-standby.log")
  pg_ctl_as_postgres -D "$data" -l "$CLUSTER_DIR/logs/postgres-standby.log" -w -t 30 start >/dev/null
  wait_until 30 "the standby's streaming" standby_streams
}

standby_streams() {
  [ "$(psql_at "$STANDBY_PORT" -Atc "select status from pg_stat_wal_receiver")" = streaming ]
}

start_redis() {
  install -d "$CLUSTER_DIR/redis"
  local log="$CLUSTER_DIR/logs/redis.log"
  PIECES+=("redis $log")
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$CLUSTER_DIR/redis" --daemonize no >"$log" 2>&1 &
  PIDS[redis]=$!
  wait_until 15 redis redis-cli -p "$REDIS_PORT" ping
}

# The registry's environment, and nothing else from this shell's (CI exports REDIS_URL): for env -i.
registry_env() {
  REGISTRY_ENV=(
    PATH="$PATH" HOME="$HOME"
    DATABASE_URL="$PRIMARY_URL" DATABASE_READ_URL="$STANDBY_URL" REDIS_URL="$REDIS_URL"
    MIGRATE_ON_START=false TRUST_PROXY=127.0.0.1/32
    PUBLIC_URL="$NGINX_URL" AUTH_URL="$NGINX_URL"
    RATE_LIMIT_RPS="$RATE_LIMIT_RPS" RATE_LIMIT_BURST="$RATE_LIMIT_BURST"
    WRITE_RATE_LIMIT_RPS=1000 WRITE_RATE_LIMIT_BURST=1000
    LOG_LEVEL=info ACCESS_LOG=false
  )
}

migrate() {
  local log="$CLUSTER_DIR/logs/migrate.log"
  PIECES+=("migrate $log")
  registry_env
  env -i "${REGISTRY_ENV[@]}" node dist/src/cli/run.js migrate >"$log" 2>&1
}

start_registry() { # name, port
  local name=$1 port=$2 log="$CLUSTER_DIR/logs/$1.log"
  PIECES+=("$name $log")
  registry_env
  # env execs node: $! is the registry's own pid, which the failover test kills.
  env -i "${REGISTRY_ENV[@]}" HOST=127.0.0.1 PORT="$port" node dist/src/cli/run.js serve >"$log" 2>&1 &
  PIDS[$name]=$!
  REGISTRY_PIDS+=("$!")
}

registry_ready() { curl -sf -o /dev/null "http://127.0.0.1:$1/readyz"; }

start_nginx() {
  local dir="$CLUSTER_DIR/nginx" log="$CLUSTER_DIR/logs/nginx.log"
  install -d -o nobody -g nogroup "$dir" "$dir/temp"
  REGISTRY_UPSTREAMS="127.0.0.1:${REGISTRY_PORTS[0]} 127.0.0.1:${REGISTRY_PORTS[1]}" \
    NGINX_HTTP_PORT="$NGINX_HTTP_PORT" NGINX_GRPC_PORT="$NGINX_GRPC_PORT" \
    deploy/nginx/render-config.sh deploy/nginx/registry.conf.template "$dir/registry.conf"
  # The main context around deploy/'s include: everything nginx writes stays in $dir, and it runs
  # as nobody (no `user`: the master does not switch users).
  cat >"$dir/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log notice;
events { worker_connections 1024; }
http {
    client_body_temp_path $dir/temp/body;
    proxy_temp_path $dir/temp/proxy;
    fastcgi_temp_path $dir/temp/fastcgi;
    uwsgi_temp_path $dir/temp/uwsgi;
    scgi_temp_path $dir/temp/scgi;
    include $dir/registry.conf;
}
EOF
  # The access log goes to nginx's stdout (/dev/stdout), which nobody must be able to reopen.
  install -o nobody -g nogroup -m 644 /dev/null "$log"
  PIECES+=("nginx $log" "nginx-errors $dir/error.log")
  local nginx=(setpriv --reuid=nobody --regid=nogroup --clear-groups -- nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log")
  "${nginx[@]}" -t -q >>"$log" 2>&1
  "${nginx[@]}" >>"$log" 2>&1 &
  PIDS[nginx]=$!
  wait_until 15 "nginx (and a replica behind it)" curl -sf -o /dev/null "$NGINX_URL/healthz"
}

# The cluster's addresses for the tests (test/cluster/cluster.ts reads them).
export_cluster_env() {
  export CLUSTER_NGINX_URL="$NGINX_URL"
  export CLUSTER_NGINX_GRPC_ADDRESS="127.0.0.1:$NGINX_GRPC_PORT"
  export CLUSTER_REGISTRY_URLS="http://127.0.0.1:${REGISTRY_PORTS[0]},http://127.0.0.1:${REGISTRY_PORTS[1]}"
  export CLUSTER_REGISTRY_PIDS="${REGISTRY_PIDS[0]},${REGISTRY_PIDS[1]}"
  export CLUSTER_PRIMARY_URL="$PRIMARY_URL"
  export CLUSTER_STANDBY_URL="$STANDBY_URL"
  export CLUSTER_RATE_LIMIT_RPS="$RATE_LIMIT_RPS"
  export CLUSTER_RATE_LIMIT_BURST="$RATE_LIMIT_BURST"
}

# Stops a background process by its pid: SIGTERM, then SIGKILL after $2 seconds.
stop_pid() {
  local pid=$1 seconds=$2
  kill -TERM "$pid" 2>/dev/null || return 0
  local deadline=$((SECONDS + seconds))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# Whether a process runs: not gone, and not a zombie that this shell has not reaped yet.
running() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $state != Z* ]]
}

# Which background pieces have exited, before the teardown stops the rest: "name ..." or empty.
exited_pieces() {
  local name
  for name in "${!PIDS[@]}"; do
    running "${PIDS[$name]}" || printf '%s ' "$name"
  done
}

print_logs() { # the pieces that had exited
  local piece name log state
  for piece in "${PIECES[@]}"; do
    name=${piece%% *}
    log=${piece#* }
    state=""
    [[ " $1 " == *" $name "* ]] && state=" (had exited)"
    if [ ! -s "$log" ]; then
      [ -n "$state" ] && printf '\n---- %s%s: no output\n' "$name" "$state"
      continue
    fi
    printf '\n---- %s%s: last lines of %s\n' "$name" "$state" "$log"
    tail -n 40 "$log"
  done
}

teardown() {
  local status=$?
  trap - EXIT INT TERM
  set +e
  local exited name
  exited=$(exited_pieces)
  # Stopped first, so that the registries write out the log lines they buffer.
  for name in nginx registry-a registry-b redis; do
    [ -n "${PIDS[$name]:-}" ] && stop_pid "${PIDS[$name]}" 6
  done
  if [ -n "$CLUSTER_DIR" ]; then
    ((status != 0)) && print_logs "$exited"
    for name in standby primary; do
      [ -f "$CLUSTER_DIR/$name/postmaster.pid" ] && pg_ctl_as_postgres -D "$CLUSTER_DIR/$name" -m immediate stop >/dev/null 2>&1
    done
    rm -rf "$CLUSTER_DIR"
  fi
  exit "$status"
}

#!/bin/sh
# Renders registry.conf.template into an nginx `http {}` include:
#   render-config.sh <template> <output>
# from REGISTRY_UPSTREAMS (the replicas' host:port, separated by spaces or commas), NGINX_HTTP_PORT
# and NGINX_GRPC_PORT. The image and the cluster test (.ci/cluster) both render with this script.
set -eu

template=$1
output=$2
: "${REGISTRY_UPSTREAMS:?set REGISTRY_UPSTREAMS to the replicas host:port, e.g. "registry-1:8080 registry-2:8080"}"
: "${NGINX_HTTP_PORT:?set NGINX_HTTP_PORT (REST, Connect, gRPC-Web over HTTP/1.1)}"
: "${NGINX_GRPC_PORT:?set NGINX_GRPC_PORT (gRPC over h2c)}"

# A replica missing its first failure is passed over for fail_timeout, then tried again.
REGISTRY_SERVERS=$(
  for upstream in $(printf '%s' "$REGISTRY_UPSTREAMS" | tr ',' ' '); do
    printf '    server %s max_fails=1 fail_timeout=5s;\n' "$upstream"
  done
)
export REGISTRY_SERVERS NGINX_HTTP_PORT NGINX_GRPC_PORT

# The list keeps envsubst to these names: nginx's own $variables pass through untouched.
envsubst '${REGISTRY_SERVERS} ${NGINX_HTTP_PORT} ${NGINX_GRPC_PORT}' <"$template" >"$output"

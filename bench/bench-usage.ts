/** What `npm run bench -- --help` prints. */
export const BENCH_USAGE = `npm run bench [-- OPTIONS]

The registry's speed on Postgres: every protocol's resolve driven by one external load generator
(h2load) against bare node:http and node:http2 floors started in the same run, creates over REST
and gRPC, signed lifecycle actions and a 200-record history, and the change feed. Each resolve row is judged against the floor of its transport: h2c
rows at least 0.6 of the node:http2 floor's req/s with p99 at most 1.25x its, HTTP/1.1 rows
(REST's first) at least 0.45 of the node:http floor's. Each row prints the server's CPU time per
call, read from /proc/<pid>/stat before and after the row. See docs/performance.md.

  (no options)              resolves on every protocol, creates, lifecycle and the change feed
                            (6-7 minutes)
  --quick                   1 run of each, 3 s each: a smoke test, not figures to quote
  --only PARTS              a comma-separated choice: resolve, creates, lifecycle (lifecycle
                            actions over REST and a name's history, run by run with the
                            creates), feed (after the creates when both run), discovery (about
                            6 minutes alone), search (about 5 minutes alone), all; or single
                            rows: rest, connect-json-h1, connect-json-h2c, connect-proto-h1,
                            connect-proto-h2c, grpc-web-h1, grpc-web-h2c, grpc, floor-http,
                            floor-http2, create-rest, create-grpc, lifecycle-rest, history. The floor of each chosen
                            row's transport is added: its target is read against it.
  --ab COMMIT               also run the same rows against COMMIT (a branch, tag or hash): it is
                            checked out as a git worktree in a temporary directory, shares
                            node_modules (npm ci when its lockfile differs), built, and served on a
                            database of its own; rows alternate A/B then B/A run after run, and
                            the medians print side by side with their ratio, judged against "no
                            row more than 5% slower". Default parts: resolve,creates (the feed,
                            when chosen, runs against this tree only). Not with --profile or --hold.
  --profile                 one run per row with \`node --cpu-prof\` on the server, and a summary of
                            where its CPU time went
  --with-rate-limit         the read limiter on (a bucket no load empties), to measure its cost;
  --rate-limit-redis URL    with the buckets in that Redis instead of Postgres
  --hold                    seed and check, print the registry's URL and each row's h2load command
                            line, and keep the registry up until Ctrl-C (for perf, strace, ...)
  --runs N                  measured runs of each row (3; 1 with --quick or --profile)
  --duration S              seconds of each measured run (5; 3 with --quick)
  --warmup S                seconds of warm-up before each run (1)
  --h1-connections N        HTTP/1.1 connections (32)
  --h2-connections N        h2c connections (4) ...
  --h2-streams N            ... with N streams each (8: 32 in flight, as HTTP/1.1's 32 connections)
  --create-connections N    creates (and lifecycle actions) in flight (64); --create-pool N
                            entries (and actions) signed beforehand (12,000)
  --feed-records N          publish first until the change log holds N records (20,000)
  --feed-live N             entries the live writer publishes (2,000; 1,000 with --quick) ...
  --feed-rate R             ... at R a second (200)
  --stream-followers N      SSE streams following the head during creates (500)
  --stream-idle N           SSE streams held idle for the memory reading (1,000)
  --stream-creates N        creates timed with and without the streams (1,000) ...
  --stream-rate R           ... at R a second (100)
  --discovery-entries N     entries for the discovery part (1,000,000; 100,000 with --quick)
  --search-entries N        entries for the search part (1,000,000; 100,000 with --quick)
  --help                    this text

Environment: DATABASE_URL, the Postgres admin URL (default postgres://postgres@127.0.0.1:5432/test;
a fresh database is created per server and dropped after); BENCH_SERVER_NODE_ARGS, extra node
flags for the server (e.g. --trace-gc).

A full run (every resolve row, both creates, both lifecycle rows and the feed, 3 runs or more, without --quick,
--profile, --ab or a rate limit) writes its table into docs/performance.md; other runs print it.
Figures go to bench/results/latest.json, the children's and h2load's output to
bench/results/bench.log.
`;

import { collectDefaultMetrics, Counter, Gauge, Registry } from "prom-client";
import type { RateLimiter } from "../rate-limits/rate-limiter.js";
import { createLeanHistogram, type HistogramSeries } from "./lean-histogram.js";

/**
 * The service's Prometheus metrics, in a registry of its own (not prom-client's global one, so
 * that several servers in one process, as in tests, count apart). Whatever feeds them is handed
 * a function from here: capability code and storage import nothing of the edge.
 */
export interface RegistryMetrics {
  /** One call answered (or abandoned by its client), with its duration. */
  callFinished(protocol: string, method: string, code: string, seconds: number): void;
  /** A read of the entry cache: answered from memory (hit) or from the database (miss). */
  entryCacheRead(hit: boolean): void;
  /** A read that could be answered from the kept answers (see edge/read-answers.ts): whether it was. */
  answerCacheRead(kept: boolean): void;
  /** A connection the front refused (a cap) or closed on a timeout (see transport/protocol-server.ts). */
  connectionRefused(reason: string): void;
  /** A database read sent to the primary or a read replica, and why (see storage/read-routing.ts). */
  databaseRead(target: string, reason: string): void;
  /**
   * Something the Postgres change feed delivered: a change ("change", this process's own writes
   * included, as they echo back) or a reset ("reset": the feed reconnected after losing its
   * connection, and every cache was emptied).
   */
  changeFeedEvent(event: "change" | "reset"): void;
  /** A rate-limit decision under `policy` ("reads", "writes", "tokens"). */
  rateLimitDecision(policy: string, allowed: boolean): void;
  /** The text exposition of every metric. */
  render(): Promise<string>;
  readonly contentType: string;
}

/** A connection pool's state, read at scrape time. */
export interface PoolStats {
  readonly used: number;
  readonly free: number;
  /** Callers waiting for a connection. */
  readonly pendingAcquires: number;
  /** Connections being opened. */
  readonly pendingCreates: number;
  readonly max: number;
}

export interface MetricsSources {
  /**
   * The database pools by name ("primary", "replica-1", ...), each read when it can be
   * (undefined: not yet created).
   */
  readonly pools?: Readonly<Record<string, () => PoolStats | undefined>>;
  /** The entry cache's size, when there is one. */
  readonly entryCache?: () => { readonly entries: number; readonly bytes: number };
  /** Change-feed streams open now (SSE and WatchChanges). */
  readonly changeStreams?: () => number;
}

/**
 * Latency buckets from half a millisecond (a cached resolve) to 10 s (past every database
 * timeout), so both a fast path and a stalled dependency show.
 */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export function createMetrics(sources: MetricsSources = {}): RegistryMetrics {
  const registry = new Registry();
  // Process and runtime metrics: CPU, memory, file descriptors, GC, and event-loop lag
  // (nodejs_eventloop_lag_seconds and the nodejs_eventloop_lag_p99_seconds family).
  collectDefaultMetrics({ register: registry });

  // Observed on every call, so not one of prom-client's (see lean-histogram.ts); rendered after them.
  const calls = createLeanHistogram({
    name: "registry_rpc_duration_seconds",
    help: "Calls by RPC method, protocol and outcome (Connect code name), and how long each took to answer; _count is the number of calls",
    labelNames: ["method", "protocol", "code"] as const,
    buckets: LATENCY_BUCKETS,
  });
  const cacheReads = new Counter({
    name: "registry_entry_cache_reads_total",
    help: "Resolves and version lists looked up in the entry cache, by result (hit or miss)",
    labelNames: ["result"] as const,
    registers: [registry],
  });
  const hits = cacheReads.labels("hit");
  const misses = cacheReads.labels("miss");
  const answerReads = new Counter({
    name: "registry_answer_cache_reads_total",
    help: "Reads of a request seen before, by result: answered from the kept answers (hit) or by running the handler (miss)",
    labelNames: ["result"] as const,
    registers: [registry],
  });
  const answerHits = answerReads.labels("hit");
  const answerMisses = answerReads.labels("miss");
  const decisions = new Counter({
    name: "registry_rate_limit_decisions_total",
    help: "Rate-limit decisions by policy and decision (allowed or refused)",
    labelNames: ["policy", "decision"] as const,
    registers: [registry],
  });

  const databaseReads = new Counter({
    name: "registry_db_reads_total",
    help: "Entry and discovery reads by where they went (primary or replica) and why; only counted with read replicas configured",
    labelNames: ["target", "reason"] as const,
    registers: [registry],
  });

  const feedEvents = new Counter({
    name: "registry_change_feed_events_total",
    help: "Events of the Postgres change feed that keeps caches current: changes heard (this process's own writes included) and resets (a reconnection after the feed was lost, which empties the caches)",
    labelNames: ["event"] as const,
    registers: [registry],
  });

  const refusals = new Counter({
    name: "registry_connections_refused_total",
    help: "Connections refused by a cap (address-cap, total-cap) or closed on a timeout (first-bytes-timeout, headers-timeout, request-timeout, ping-timeout)",
    labelNames: ["reason"] as const,
    registers: [registry],
  });

  const { pools, entryCache } = sources;
  if (pools !== undefined) {
    const poolGauge = (name: string, help: string, read: (stats: PoolStats) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ["pool"] as const,
        registers: [registry],
        collect() {
          for (const [pool, statsOf] of Object.entries(pools)) {
            const stats = statsOf();
            if (stats !== undefined) this.set({ pool }, read(stats));
          }
        },
      });
    poolGauge("registry_db_pool_connections_used", "Database connections lent out to queries", (stats) => stats.used);
    poolGauge("registry_db_pool_connections_free", "Open database connections waiting in the pool", (stats) => stats.free);
    poolGauge("registry_db_pool_connections_max", "Most database connections the pool opens", (stats) => stats.max);
    poolGauge("registry_db_pool_pending_acquires", "Queries waiting for a database connection", (stats) => stats.pendingAcquires);
    poolGauge("registry_db_pool_pending_creates", "Database connections being opened", (stats) => stats.pendingCreates);
  }
  if (entryCache !== undefined) {
    new Gauge({
      name: "registry_entry_cache_entries",
      help: "Entry DIDs held in the entry cache",
      registers: [registry],
      collect() {
        this.set(entryCache().entries);
      },
    });
    new Gauge({
      name: "registry_entry_cache_bytes",
      help: "Estimated memory taken by the entry cache",
      registers: [registry],
      collect() {
        this.set(entryCache().bytes);
      },
    });
  }

  const changeStreams = sources.changeStreams;
  if (changeStreams !== undefined) {
    new Gauge({
      name: "registry_change_streams_open",
      help: "Change-feed streams open (SSE and WatchChanges), against MAX_STREAMS",
      registers: [registry],
      collect() {
        this.set(changeStreams());
      },
    });
  }

  // Each call's series, found by one string: methods, protocols and codes are each a small fixed
  // set ("unmatched" stands for any unknown path).
  const callSeries = new Map<string, HistogramSeries>();
  return {
    callFinished(protocol, method, code, seconds) {
      const key = `${protocol} ${method} ${code}`;
      let series = callSeries.get(key);
      if (series === undefined) callSeries.set(key, (series = calls.labels({ method, protocol, code })));
      series.observe(seconds);
    },
    entryCacheRead(hit) {
      (hit ? hits : misses).inc();
    },
    answerCacheRead(kept) {
      (kept ? answerHits : answerMisses).inc();
    },
    connectionRefused(reason) {
      refusals.inc({ reason });
    },
    databaseRead(target, reason) {
      databaseReads.inc({ target, reason });
    },
    changeFeedEvent(event) {
      feedEvents.inc({ event });
    },
    rateLimitDecision(policy, allowed) {
      decisions.inc({ policy, decision: allowed ? "allowed" : "refused" });
    },
    async render() {
      const text = await registry.metrics();
      const durations = calls.render();
      return durations === "" ? text : `${text}\n${durations}`;
    },
    contentType: registry.contentType,
  };
}

/** knex's connection pool (tarn), as far as the gauges read it. */
interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
  numPendingCreates(): number;
  readonly max: number;
}

/**
 * The state of a knex instance's pool. knex keeps it on `client.pool` (tarn), created with the
 * instance and replaced on reinitialisation, so it is looked up at each scrape.
 */
export function knexPoolStats(knex: { readonly client: unknown }): () => PoolStats | undefined {
  return () => {
    const pool = (knex.client as { pool?: TarnPool }).pool;
    if (pool === undefined) return undefined;
    return {
      used: pool.numUsed(),
      free: pool.numFree(),
      pendingAcquires: pool.numPendingAcquires(),
      pendingCreates: pool.numPendingCreates(),
      max: pool.max,
    };
  };
}

/** A rate limiter whose every decision is counted. */
export function countedRateLimiter(limiter: RateLimiter, metrics: RegistryMetrics): RateLimiter {
  return {
    policies: limiter.policies,
    take: async (policy, key) => {
      const decision = await limiter.take(policy, key);
      metrics.rateLimitDecision(policy, decision.allowed);
      return decision;
    },
    close: () => limiter.close(),
  };
}

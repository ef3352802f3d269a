import { setMaxListeners } from "node:events";
import type { AddressInfo } from "node:net";
import { createAccessTokenVerifier } from "./auth/access-token-verifier.js";
import { createKnexAuthRepository } from "./storage/knex-auth-repository.js";
import { createTokenIssuer } from "./auth/token-issuer.js";
import { createAdminCredentialVerifier, generateAdminCredential, type AdminCredentialVerifier } from "./auth/admin-credential.js";
import { createRootTokenAdmin } from "./auth/root-token-admin.js";
import { ConfigError, type RegistryConfig } from "./config.js";
import { importOptionalPackage } from "./optional-packages.js";
import { createEntryActionService } from "./entries/entry-action-service.js";
import { createEntryService } from "./entries/entry-service.js";
import { createDiscoveryService } from "./discovery/discovery-service.js";
import { createCursorCodec } from "./discovery/page-cursor.js";
import type { SearchRepository } from "./discovery/search-repository.js";
import { createSearchService } from "./discovery/search-service.js";
import { createErrorMappingInterceptor } from "./edge/error-mapping.js";
import { addressKey, createClientAddressResolver, createTrustedProxyTest } from "./edge/client-address.js";
import {
  createExchangeLimit,
  createRateLimitInterceptor,
  createWriteLimit,
  type ExchangeLimit,
  type WriteLimit,
} from "./edge/rate-limit-interceptor.js";
import { ADDRESS_LIMITS, KEPT_READS } from "./edge/method-policies.js";
import { createMemoryBucketStore, type BucketStore } from "./rate-limits/bucket-store.js";
import { createPostgresBucketStore } from "./storage/postgres-bucket-store.js";
import { createRedisBucketStore } from "./storage/redis-bucket-store.js";
import { createRateLimiter, type RateLimiter, type RateLimitPolicyLimits } from "./rate-limits/rate-limiter.js";
import { createHealthService } from "./edge/health-service.js";
import { createProtocolServer } from "./transport/protocol-server.js";
import { createRegistryServiceImpl } from "./edge/registry-service-handlers.js";
import { createRequestPipeline } from "./edge/request-pipeline.js";
import { createRpcPipelines } from "./edge/rpc-pipelines.js";
import { servedService, type ServedService } from "./edge/served-services.js";
import { useNodeTextEncoding } from "./transport/node-text-encoding.js";
import { createCallObserver, createRefusalReporter } from "./edge/observability.js";
import { countedRateLimiter, createMetrics, knexPoolStats, type RegistryMetrics } from "./observability/metrics.js";
import { startMetricsServer, type MetricsServer } from "./observability/metrics-server.js";
import type { Tracing } from "./observability/tracing.js";
import { createTokenServiceImpl } from "./edge/token-service-handlers.js";
import { createAdminServiceImpl } from "./edge/admin-service-handlers.js";
import { removeAdminCredential, writeAdminCredential } from "./storage/admin-credential-file.js";
import { describeError, type Logger } from "./logger.js";
import { migrateToLatest, openDatabase, pendingMigrations, type Database, type DatabaseOptions } from "./storage/database.js";
import { createLocalChangeFeed, createPostgresChangeFeed } from "./storage/change-feed.js";
import { createKnexChangeLog } from "./storage/knex-change-log.js";
import type { ChangeFeed } from "./storage/entry-cache.js";
import { createChangeLogService, type ChangeLogLimits, type ChangeLogService } from "./changes/change-log-service.js";
import { createChangeStream } from "./edge/change-stream.js";
import { createFeedStreamGuard } from "./edge/feed-stream-guard.js";
import { createStreamAdmission } from "./edge/stream-admission.js";
import { createLogIntegrator, signEmptyTreeCheckpoint } from "./changes/log-integrator.js";
import { createReadOnlyEntryRepository } from "./entries/read-only-entry-repository.js";
import { createTransparencyService } from "./changes/transparency-service.js";
import { createTransparencyLogServiceImpl, type PublishedLogKey } from "./edge/transparency-log-handlers.js";
import { createLogFiles, type LogFiles } from "./edge/log-files.js";
import { createKnexTreeStore } from "./storage/knex-tree-store.js";
import { mirroredLogKey } from "./storage/knex-mirror-store.js";
import { openLogSigner } from "./storage/log-signing-key.js";
import { nodeMerkleHasher, nodeSha256 } from "./transparency/node-merkle-hasher.js";
import { parseVerifierKey, verifierKeyText, type NoteSigner } from "./transparency/signed-note.js";
import { createLogGrowth } from "./changes/log-growth.js";
import { createChangeFeedServiceImpl } from "./edge/change-feed-handlers.js";
import { createCachedEntryRepository } from "./storage/entry-cache.js";
import { createReadAnswers } from "./edge/read-answers.js";
import { createExplorer, type ExplorerLookup } from "./edge/explorer/explorer-pages.js";
import { explorerDirectory, loadExplorerFiles } from "./edge/explorer/explorer-files.js";
import { createRegistryLookup } from "./edge/explorer/registry-lookup.js";
import { createKnexEntryRepository } from "./storage/knex-entry-repository.js";
import { createKnexDiscoveryRepository } from "./storage/knex-discovery-repository.js";
import { createKnexSearchRepository } from "./storage/knex-search-repository.js";
import { loadOrCreateSecret } from "./storage/registry-secrets.js";
import { checkSameCluster, createWalPositions, openReadReplicas } from "./storage/read-replicas.js";
import {
  createReadRouter,
  createReplicaRotation,
  createReplicaRoutedDiscoveryRepository,
  createReplicaRoutedEntryRepository,
  type ReadRouter,
  type ReadRouterOptions,
} from "./storage/read-routing.js";
import { createReplicaFreshness } from "./storage/replica-freshness.js";
import type { EntryRepository } from "./entries/entry-repository.js";
import { TokenService } from "../gen/auth/v1/token_service_pb.js";
import { AdminService } from "../gen/auth/v1/admin_service_pb.js";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import { RegistryService } from "../gen/registry/v1/registry_service_pb.js";
import { ChangeFeedService } from "../gen/registry/v1/change_feed_service_pb.js";
import { TransparencyLogService } from "../gen/registry/v1/transparency_log_service_pb.js";

/** How long streams may run on after shutdown begins. */
const STREAM_DRAIN_MS = 1_000;

export interface RunningRegistry {
  readonly address: AddressInfo;
  /** Base URL of the listening server, e.g. http://127.0.0.1:8080. */
  readonly url: string;
  /** Where GET /metrics is served: the admin port (METRICS_PORT) or the main one. */
  readonly metricsUrl: string;
  readonly database: Database;
  close(): Promise<void>;
}

export interface StartOptions {
  readonly logger: Logger;
  /** Use this database instead of opening one from the config (tests share one). */
  readonly database?: Database;
}

/** Opens the database, applies migrations, and serves the halves of the service the role asks for. */
export async function startRegistry(config: RegistryConfig, options: StartOptions): Promise<RunningRegistry> {
  useNodeTextEncoding();
  // Decided before anything opens, so a refused setting leaves nothing to close.
  const adminApiOn = servesAdminApi(config, options);
  // A missing optional package is a refused setting too: found now, it leaves nothing to close.
  if (config.redisUrl !== "") await importOptionalPackage("redis", "REDIS_URL", () => import("redis"));
  const tracing = await openTracing(config, options.logger);
  // Lines logged inside a traced call name its trace.
  const logger = tracing === undefined ? options.logger : options.logger.withTrace(tracing.currentTrace);
  const database =
    options.database ??
    (await openDatabase(databaseOptions(config, logger)).catch(async (error: unknown) => {
      await tracing?.close();
      throw error;
    }));
  // An open pool or exporter would keep the process alive after it reported the error.
  const closeOnFailure = async (error: unknown): Promise<never> => {
    if (options.database === undefined) await database.close();
    await tracing?.close();
    throw error;
  };
  await prepareSchema(config, database).catch(closeOnFailure);
  const replicas = await openReplicas(config, database, logger).catch(closeOnFailure);
  const shutdown = new AbortController();
  // Connect links every call in flight to this signal: one listener each, legitimately many.
  setMaxListeners(0, shutdown.signal);
  const streams = createStreamAdmission({ perAddress: config.maxStreamsPerIp, total: config.maxStreams });
  const metrics = createMetrics({
    pools: Object.fromEntries([
      ["primary", knexPoolStats(database.knex)],
      ...replicas.map((replica, index) => [`replica-${index + 1}`, knexPoolStats(replica.knex)]),
    ]),
    entryCache: () => entryStore.stats(),
    changeStreams: () => streams.size,
  });
  const routing = readRouterOptions(replicas.length, logger, metrics);
  const entryStore = await openEntryRepository(config, { primary: database, replicas, routing }, logger, metrics);
  // Built (and TRUST_PROXY checked) at start whatever the limits; read when limiting and for
  // access lines, so with neither no request pays for resolving one.
  const resolveClientAddress = createClientAddressResolver(config.trustProxy);
  const openedLimiter = await openRateLimiter(config, database, logger).catch(async (error: unknown) => {
    await entryStore.close();
    await Promise.all(replicas.map((replica) => replica.close()));
    return closeOnFailure(error);
  });
  const limiter = openedLimiter === undefined ? undefined : countedRateLimiter(openedLimiter, metrics);
  const limitWrite = limiter?.policies.has("writes") ? createWriteLimit(limiter) : undefined;
  // For reads that are no RPC (tlog-tiles paths, the SSE stream): the same buckets and answers.
  const limitRead = limiter?.policies.has("reads") ? createExchangeLimit(limiter, "reads", resolveClientAddress) : undefined;
  const adminCredential = adminApiOn ? generateAdminCredential() : undefined;
  const adminVerifier = adminCredential === undefined ? undefined : createAdminCredentialVerifier(adminCredential);
  const {
    services,
    close: closeServices,
    quiesce,
    changeFeed,
    logFiles,
    explorerSource,
  } = await createServices(
    config,
    { primary: database, replicas, routing },
    { repository: entryStore.repository, feed: entryStore.feed },
    { write: limitWrite, read: limitRead },
    adminVerifier,
    logger,
  );
  const addressLimits = ADDRESS_LIMITS.filter(({ policy }) => limiter?.policies.has(policy));
  const logUnexpected = (error: unknown) => logger.error("request failed", describeError(error));
  const isReady = () => database.ping(config.readinessTimeoutMs).then(() => true);
  const health = createHealthService(isReady, { services: services.map(({ service }) => service.typeName) });
  // Kept answers follow the entry cache's invalidations, so there are none without it.
  const answers =
    entryStore.changes === undefined || config.answerCacheSize === 0
      ? undefined
      : createReadAnswers({
          changes: entryStore.changes,
          maxRequests: config.answerCacheSize,
          maxBytes: config.answerCacheMb * 1024 * 1024,
          onRead: (kept) => metrics.answerCacheRead(kept),
        });
  const pipelines = createRpcPipelines({
    services: [...services, servedService(Health, health)].map((served) => answers?.decorate(served, KEPT_READS) ?? served),
    // The limiter runs first (outermost): a refused call costs nothing more, and its headers reach
    // every answer, errors (already mapped to Connect errors) included.
    interceptors: [
      ...(limiter === undefined || addressLimits.length === 0 ? [] : [createRateLimitInterceptor({ limiter, limits: addressLimits })]),
      createErrorMappingInterceptor(logUnexpected),
    ],
    streamInterceptors: [
      createFeedStreamGuard({
        methods: [ChangeFeedService.method.watchChanges],
        admission: streams,
        stallTimeoutMs: config.streamStallTimeoutMs,
      }),
    ],
    maxBodyBytes: config.maxBodyBytes,
    shutdownSignal: shutdown.signal,
    resolveClientAddress,
    // The per-address limits and the admin API's limit on wrong credentials read it; calls with
    // neither pay for none.
    unaryReadsAddress: limiter !== undefined || adminVerifier !== undefined,
    log: logUnexpected,
  });
  tracing?.traceQueries(database.knex, "primary");
  for (const [index, replica] of replicas.entries()) tracing?.traceQueries(replica.knex, `replica-${index + 1}`);
  // The connection cap keys clients as the per-address limits do; trusted proxies are exempt.
  const isTrustedProxy = createTrustedProxyTest(config.trustProxy);
  const server = createProtocolServer(
    createRequestPipeline({
      corsOrigins: config.corsOrigins,
      rpc: pipelines.rpc,
      unaryMethods: pipelines.unaryMethods,
      adapterPaths: pipelines.adapterPaths,
      adapter: pipelines.adapter,
      rest: pipelines.rest,
      logFiles,
      explorer:
        explorerSource === undefined
          ? undefined
          : createExplorer({
              ...explorerSource,
              files: await loadExplorerFiles(explorerDirectory()),
              limitLookup: limitRead,
              log: logUnexpected,
            }),
      changeStream:
        changeFeed === undefined
          ? undefined
          : createChangeStream({
              feed: changeFeed,
              shutdownSignal: shutdown.signal,
              keepAliveMs: SSE_KEEP_ALIVE_MS,
              admission: streams,
              resolveClientAddress,
              limitOpen: limitRead,
              stallTimeoutMs: config.streamStallTimeoutMs,
              log: logUnexpected,
            }),
      isReady,
      log: logUnexpected,
      observer: createCallObserver({
        accessLog: config.accessLog ? logger : undefined,
        metrics,
        trustProxy: config.trustProxy,
        resolveClientAddress,
        tracer: tracing?.serverSpans,
      }),
      metrics: config.metricsPort === undefined ? metrics : undefined,
    }),
    config,
    {
      onRefusal: createRefusalReporter(logger, metrics),
      addressKeyOf: (address) => (isTrustedProxy(address) ? undefined : addressKey(address)),
    },
  );
  /** Everything the server was built on, closed once it no longer serves (or never could). */
  const release = async () => {
    // Every call has ended, and so has its span: the last ones are exported now.
    await tracing?.close();
    shutdown.abort();
    await limiter?.close();
    await closeServices();
    await entryStore.close();
    await Promise.all(replicas.map((replica) => replica.close()));
    if (options.database === undefined) await database.close();
  };
  /** Removes the credential file if it is this server's: a stopped server's credential opens nothing. */
  const removeOwnAdminCredential = async () => {
    if (adminVerifier === undefined) return;
    await removeAdminCredential(config.dataDir, adminVerifier.matches).catch((error: unknown) =>
      logger.warn("cannot remove the admin credential file", describeError(error)),
    );
  };
  let metricsServer: MetricsServer | undefined;
  let address: AddressInfo;
  try {
    // Written before the server listens: once it answers health checks, `npm start` and the
    // tests treat it as started, and stopping it must not race with a file still being written.
    if (adminCredential !== undefined && services.some(({ service }) => service === AdminService)) {
      const path = await writeAdminCredential(config.dataDir, adminCredential);
      logger.info("admin API on; its credential is in the data directory", { path });
    }
    address = await server.listen(config.port, config.host);
    metricsServer = await startAdminMetrics(config, metrics).catch(async (error: unknown) => {
      await server.close(0);
      throw error;
    });
  } catch (error) {
    // A busy port, say: an open pool or change feed would keep the process alive after the error.
    await removeOwnAdminCredential();
    await release();
    throw error;
  }
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  const metricsUrl = metricsServer === undefined ? `${url}/metrics` : `${metricsServer.url}/metrics`;
  logger.info("registry listening", { url, metricsUrl, role: config.role, database: database.kind });

  return {
    address,
    url,
    metricsUrl,
    database,
    async close() {
      // Background work (integrating the transparency log) would take event-loop time from draining.
      quiesce();
      // First, so no CLI picks up the credential of a server that is going away.
      await removeOwnAdminCredential();
      // In-flight unary calls finish normally; streams that never end by themselves (health
      // Watch, reflection) are told to stop after a moment, so the server can drain.
      const endStreams = setTimeout(() => shutdown.abort(), STREAM_DRAIN_MS);
      await server.close(config.shutdownGraceMs);
      clearTimeout(endStreams);
      await metricsServer?.close();
      await release();
    },
  };
}

/**
 * Whether this server offers auth.v1.AdminService (in the roles that issue tokens). By default
 * only when it holds the embedded database in a data directory itself: no other process can open
 * that database then, so the running server is the only way to its root tokens. On Postgres the
 * CLI works on the database directly, and a deployment need not grow an admin surface (or write
 * to its filesystem) unless ADMIN_API=true asks for it.
 */
function servesAdminApi(config: RegistryConfig, options: StartOptions): boolean {
  if (config.adminApi === false) return false;
  const inMemory = config.dataDir === "" || config.dataDir.startsWith("memory://");
  if (config.adminApi === true) {
    if (inMemory)
      throw new ConfigError("ADMIN_API=true needs REGISTRY_DATA_DIR to name a directory: the admin credential is written there");
    return true;
  }
  return options.database === undefined && config.databaseUrl === "" && !inMemory;
}

/** The primary and its read replicas (none unless DATABASE_READ_URL is set), and how reads pick. */
interface Databases {
  readonly primary: Database;
  readonly replicas: readonly Database[];
  readonly routing: ReadRouterOptions;
}

/** How every pool is opened: sizes and timeouts from the config, knex's messages into the log. */
function databaseOptions(config: RegistryConfig, logger: Logger): DatabaseOptions {
  return {
    ...config,
    poolMax: config.databasePoolMax,
    driverLog: (level, message) => logger.debug("database driver", { level, message }),
    // A server killed or a directory copied: taken over, but an operator should be able to see it.
    onStaleLock: (holder, reason) => logger.warn("took over the data directory's stale lock", { holder, reason }),
  };
}

/** Pools for DATABASE_READ_URL, checked to be replicas of the primary where they can be reached. */
async function openReplicas(config: RegistryConfig, primary: Database, logger: Logger): Promise<Database[]> {
  if (config.databaseReadUrls.length === 0 || config.role === "auth") return [];
  const replicas = await openReadReplicas(config.databaseReadUrls, databaseOptions(config, logger));
  try {
    await checkSameCluster(primary, replicas, (replica, error) =>
      logger.warn("read replica unreachable at start; reads go to the primary until it answers", {
        replica: replica + 1,
        ...describeError(error),
      }),
    );
  } catch (error) {
    await Promise.all(replicas.map((replica) => replica.close()));
    throw error;
  }
  return replicas;
}

/** Search on the replicas, as discovery is: a cursor carries a position, so a walk may change replica. */
function replicaRoutedSearch(router: ReadRouter<SearchRepository>): SearchRepository {
  return { search: (query, page) => router.read((repository) => repository.search(query, page)) };
}

/** How reads pick among the replicas: one rotation for entries and discovery alike. */
function readRouterOptions(replicaCount: number, logger: Logger, metrics: RegistryMetrics): ReadRouterOptions {
  return {
    rotation: createReplicaRotation(replicaCount),
    onRead: (target, reason) => metrics.databaseRead(target, reason),
    onReplicaFailure: (replica, error) =>
      logger.warn("read replica failed; resting it and reading from the primary", { replica: replica + 1, ...describeError(error) }),
  };
}

/**
 * OpenTelemetry tracing, when an OTLP endpoint is configured. Imported only then: with tracing
 * off not one OpenTelemetry module is loaded, and calls run as if it did not exist.
 */
async function openTracing(config: RegistryConfig, logger: Logger): Promise<Tracing | undefined> {
  if (config.otlpTracesEndpoint === undefined) return undefined;
  const { startTracing } = await importOptionalPackage(
    "@opentelemetry/exporter-trace-otlp-http",
    "tracing (an OTLP endpoint)",
    () => import("./observability/tracing.js"),
  );
  return startTracing({
    endpoint: config.otlpTracesEndpoint,
    serviceName: config.otelServiceName,
    sampleRatio: config.otelSampleRatio,
    onExportError: (error) => logger.warn("trace export failed; these spans are lost", describeError(error)),
  });
}

/**
 * The admin port, when METRICS_PORT is set: metrics are for the operator, and on their own port
 * they are reachable only where the operator exposes them, and scrapes never queue behind (or
 * count against the limits of) public traffic.
 */
async function startAdminMetrics(config: RegistryConfig, metrics: RegistryMetrics): Promise<MetricsServer | undefined> {
  if (config.metricsPort === undefined) return undefined;
  return startMetricsServer(metrics, config.metricsPort, config.host);
}

/**
 * Applies migrations, or with MIGRATE_ON_START=false (deployments that forbid schema changes at
 * start) only checks that someone ran `registry migrate` first.
 */
async function prepareSchema(config: RegistryConfig, database: Database): Promise<void> {
  if (config.migrateOnStart) {
    await migrateToLatest(database);
    return;
  }
  const pending = await pendingMigrations(database);
  if (pending.length > 0) {
    throw new ConfigError(
      `the database schema is behind this build (${pending.length} migration${pending.length === 1 ? "" : "s"} not applied: ${pending.join(", ")}) and MIGRATE_ON_START is false; run \`registry migrate\` with the same DATABASE_URL first`,
    );
  }
}

/**
 * Reads wait little for the limiter's store: it must not add their latency. Writes and token
 * requests wait on the database anyway, and a store slowed down by a flood of them must not
 * hand the flood over to per-process buckets.
 */
const READ_STORE_TIMEOUT_MS = 100;
const WRITE_STORE_TIMEOUT_MS = 1_000;

/** The limits this role enforces: those of the services it serves, less those set to 0. */
function rateLimitPolicies(config: RegistryConfig): Record<string, RateLimitPolicyLimits> {
  const servesRegistry = config.role !== "auth";
  const servesTokens = config.role !== "registry";
  const policies: Record<string, RateLimitPolicyLimits> = {};
  const storeTimeoutMs = WRITE_STORE_TIMEOUT_MS;
  if (servesRegistry && config.rateLimitRps > 0) {
    policies.reads = { rate: config.rateLimitRps, burst: config.rateLimitBurst, storeTimeoutMs: READ_STORE_TIMEOUT_MS };
  }
  if (servesRegistry && config.writeRateLimitRps > 0) {
    policies.writes = { rate: config.writeRateLimitRps, burst: config.writeRateLimitBurst, storeTimeoutMs };
  }
  if (servesTokens && config.tokenRateLimitRps > 0) {
    policies.tokens = { rate: config.tokenRateLimitRps, burst: config.tokenRateLimitBurst, storeTimeoutMs };
  }
  return policies;
}

/**
 * Buckets shared by replicas: in Redis when configured, else in Postgres. The embedded database
 * belongs to one process, and its single connection should not carry a write for every read, so
 * there the buckets stay in memory.
 */
async function openRateLimiter(config: RegistryConfig, database: Database, logger: Logger): Promise<RateLimiter | undefined> {
  const policies = rateLimitPolicies(config);
  if (Object.keys(policies).length === 0) return undefined;
  let store: BucketStore;
  if (config.redisUrl !== "") {
    store = await createRedisBucketStore({
      url: config.redisUrl,
      onError: (error) => logger.error("rate-limit Redis connection trouble", describeError(error)),
    });
  } else if (database.kind === "postgres") {
    store = createPostgresBucketStore(database.knex);
  } else {
    store = createMemoryBucketStore();
  }
  return createRateLimiter({ policies, store, logger });
}

/**
 * The entry repository: reading from replicas when there are any, behind a per-process read cache
 * unless ENTRY_CACHE_SIZE is 0. On Postgres other processes' writes reach the cache, and the
 * replica routing, through LISTEN/NOTIFY; an embedded database has no other writers.
 */
async function openEntryRepository(config: RegistryConfig, databases: Databases, logger: Logger, metrics: RegistryMetrics) {
  const { primary: database, replicas } = databases;
  const primary = createKnexEntryRepository(database.knex);
  const cached = config.entryCacheSize > 0 && config.role !== "auth";
  // Other processes' writes, on Postgres: for the cache, the replica routing and the change log's watchers.
  const feed =
    database.url !== undefined && config.role !== "auth"
      ? await createPostgresChangeFeed({
          databaseUrl: database.url,
          connectTimeoutMs: config.databaseConnectTimeoutMs,
          heartbeatMs: config.entryCacheHeartbeatMs,
          onError: (error) => logger.error("change notifications lost; caching paused and change watchers poll", describeError(error)),
        })
      : createLocalChangeFeed();
  feed.subscribe({ onChange: () => metrics.changeFeedEvent("change"), onReset: () => metrics.changeFeedEvent("reset") });
  if (!cached && replicas.length === 0) {
    return { repository: primary, feed, changes: undefined, stats: () => ({ entries: 0, bytes: 0 }), close: () => feed.close() };
  }
  let repository = primary;
  let closeFreshness = () => {};
  if (replicas.length > 0) {
    const freshness = createReplicaFreshness({
      feed,
      positions: createWalPositions(database, replicas),
      onError: (error) =>
        logger.warn("cannot read the replicas' positions; changed entries are read from the primary meanwhile", describeError(error)),
    });
    closeFreshness = () => freshness.close();
    const router = createReadRouter(
      primary,
      replicas.map((replica) => createKnexEntryRepository(replica.knex)),
      databases.routing,
    );
    repository = createReplicaRoutedEntryRepository(router, freshness);
  }
  if (!cached) {
    return {
      repository,
      feed,
      changes: undefined,
      stats: () => ({ entries: 0, bytes: 0 }),
      close: async () => {
        closeFreshness();
        await feed.close();
      },
    };
  }
  const cache = createCachedEntryRepository(repository, feed, {
    maxEntries: config.entryCacheSize,
    maxBytes: config.entryCacheMb * 1024 * 1024,
    onRead: (hit) => metrics.entryCacheRead(hit),
  });
  return {
    repository: cache as EntryRepository,
    feed,
    changes: cache.changes,
    stats: () => ({ entries: cache.size, bytes: cache.bytes }),
    close: async () => {
      closeFreshness();
      await feed.close();
    },
  };
}

/** The implementations of the services this role serves. */
async function createServices(
  config: RegistryConfig,
  databases: Databases,
  entryStore: { readonly repository: EntryRepository; readonly feed: ChangeFeed },
  limits: { readonly write?: WriteLimit; readonly read?: ExchangeLimit },
  adminCredential: AdminCredentialVerifier | undefined,
  logger: Logger,
): Promise<{
  services: ServedService[];
  /** Stops background work at the start of a shutdown, so the event loop drains requests. */
  quiesce(): void;
  close(): Promise<void>;
  changeFeed?: ChangeLogService;
  logFiles?: LogFiles;
  /** What the explorer's pages need: the log key they pin, and lookups for their 404s. */
  explorerSource?: { readonly logKey: string; readonly lookup: ExplorerLookup };
}> {
  const { primary: database, replicas } = databases;
  const services: ServedService[] = [];
  const none = { services, quiesce: () => {}, close: async () => {} };
  const authRepository = createKnexAuthRepository(database.knex);
  const issuer = config.role === "registry" ? undefined : createTokenIssuer({ repository: authRepository, config });
  if (issuer !== undefined) {
    services.push(servedService(TokenService, createTokenServiceImpl(issuer)));
    if (adminCredential !== undefined) {
      const admin = createRootTokenAdmin({ repository: authRepository, entryTypes: config.entryTypes });
      services.push(servedService(AdminService, createAdminServiceImpl(adminCredential, admin)));
    }
  }
  if (config.role === "auth") return none;
  const log = await openChangeAndTransparencyLogs(config, database, entryStore.feed, logger, limits.read);
  const entryRepository =
    log.mirrorOf === undefined
      ? hintingWrites(entryStore.repository, log.hintWrite)
      : createReadOnlyEntryRepository(entryStore.repository, log.mirrorOf);
  const verifier = createAccessTokenVerifier({
    issuer: config.authUrl,
    audience: config.tokenAudience,
    keys: issuer === undefined ? new URL(`${config.authUrl}/.well-known/jwks.json`) : (opts) => issuer.jwks(opts),
    // The primary, every write: a root token revoked by any process is refused at once by all.
    findRootToken: (id) => authRepository.findRootTokenById(id),
  });
  const entries = createEntryService({ repository: entryRepository, entryTypes: config.entryTypes });
  const actions = createEntryActionService({ repository: entryRepository });
  const cursors = createCursorCodec({
    secret: config.cursorSecret ?? (await loadOrCreateSecret(database.knex, "page-cursor")),
    ttlMs: config.cursorTtlSeconds * 1000,
  });
  const discoveryOn = (knex: Database["knex"]) => createKnexDiscoveryRepository(knex, { statementTimeoutMs: config.discoveryTimeoutMs });
  const discovery = createDiscoveryService({
    repository:
      replicas.length === 0
        ? discoveryOn(database.knex)
        : createReplicaRoutedDiscoveryRepository(
            createReadRouter(
              discoveryOn(database.knex),
              replicas.map((replica) => discoveryOn(replica.knex)),
              databases.routing,
            ),
          ),
    cursors,
    totalLimit: config.discoveryTotalLimit,
  });
  // Search reads where discovery does, within discovery's statement timeout.
  const searchOn = (knex: Database["knex"]) => createKnexSearchRepository(knex, { statementTimeoutMs: config.discoveryTimeoutMs });
  const search = createSearchService({
    repository:
      replicas.length === 0
        ? searchOn(database.knex)
        : replicaRoutedSearch(
            createReadRouter(
              searchOn(database.knex),
              replicas.map((replica) => searchOn(replica.knex)),
              databases.routing,
            ),
          ),
    cursors,
  });
  const impl = createRegistryServiceImpl({
    entries,
    actions,
    discovery,
    search,
    authenticate: (header) => verifier.authenticate(header),
    resolveMaxAgeSeconds: config.resolveMaxAgeSeconds,
    limitWrite: limits.write,
  });
  services.push(servedService(RegistryService, impl));
  services.push(servedService(ChangeFeedService, createChangeFeedServiceImpl(log.changeFeed)));
  services.push(servedService(TransparencyLogService, createTransparencyLogServiceImpl(log.transparency, log.key)));
  return {
    services,
    quiesce: log.quiesce,
    close: log.close,
    changeFeed: log.changeFeed,
    logFiles: log.files,
    explorerSource: { logKey: log.key.verifierKey, lookup: createRegistryLookup({ entries, discovery }) },
  };
}

/**
 * The change log's feed and the transparency log over it: one size watcher for this process's
 * streams (woken by its own writes and by other processes' notifications), the integrator that
 * grows the tree and signs checkpoints, and the proofs and tiles read from it.
 */
async function openChangeAndTransparencyLogs(
  config: RegistryConfig,
  database: Database,
  notifications: ChangeFeed,
  logger: Logger,
  limitRead: ExchangeLimit | undefined,
) {
  const changeLog = createKnexChangeLog(database.knex);
  const growth = createLogGrowth({ readSize: () => changeLog.size(), pollMs: LOG_POLL_MS });
  notifications.subscribe({ onChange: () => growth.hint(), onReset: () => growth.hint() });
  const treeStore = createKnexTreeStore(database.knex);
  const { key, signer, mirrorOf } = await openLogKey(config, database);
  const integrator =
    signer === undefined
      ? undefined
      : createLogIntegrator({
          store: treeStore,
          hasher: nodeMerkleHasher,
          sha256: nodeSha256,
          signer,
          intervalMs: config.logIntegrateMs,
          onError: (error) => logger.error("the transparency log could not integrate new changes; it retries", describeError(error)),
        });
  const emptyTree = signer === undefined ? undefined : await signEmptyTreeCheckpoint(signer, nodeMerkleHasher, nodeSha256);
  const transparency = createTransparencyService({ store: treeStore, hasher: nodeMerkleHasher, emptyTree });
  return {
    mirrorOf,
    changeFeed: createChangeLogService({ log: changeLog, growth, limits: changeLogLimits(config) }),
    transparency,
    key,
    files: createLogFiles({
      store: treeStore,
      transparency,
      log: (error: unknown) => logger.error("request failed", describeError(error)),
      limitRead,
    }),
    /** A write of this process committed: wake its streams now, and integrate soon. */
    hintWrite: () => {
      growth.hint();
      integrator?.hint();
    },
    quiesce: () => integrator?.stop(),
    close: async () => {
      growth.close();
      await integrator?.close();
    },
  };
}

/**
 * The log key this registry publishes. Its own, with the signer of its checkpoints; or, on a
 * mirror's database, which holds another registry's log, that log's key, its origin as `mirrorOf`,
 * and no signer: nothing is signed here.
 */
async function openLogKey(
  config: RegistryConfig,
  database: Database,
): Promise<{ key: PublishedLogKey; signer?: NoteSigner; mirrorOf?: string }> {
  const mirrored = await mirroredLogKey(database.knex);
  if (mirrored !== undefined) {
    const source = parseVerifierKey(mirrored, nodeSha256);
    return { key: { origin: source.name, verifierKey: mirrored, publicKey: source.publicKey }, mirrorOf: source.name };
  }
  const signer = await openLogSigner(database.knex, config.logOrigin, config.logSigningKey);
  return { key: { origin: signer.name, verifierKey: verifierKeyText(signer, nodeSha256), publicKey: signer.publicKey }, signer };
}

/**
 * The change log's bounds: pages as configured; catch-up reads take a quarter of the pool at most,
 * so streams replaying at once leave the rest to calls; the shared tail holds 1,000 records, or
 * 16 pages' weight, which are what the streams at the head need.
 */
function changeLogLimits(config: RegistryConfig): ChangeLogLimits {
  return {
    pageMaxBytes: config.changePageMaxBytes,
    watchReadConcurrency: Math.max(1, Math.floor(config.databasePoolMax / 4)),
    tailMaxRecords: 1_000,
    tailMaxBytes: 16 * config.changePageMaxBytes,
  };
}

/**
 * How often a process with watchers reads the log's size even without a notification: what a
 * watcher may lag behind another process's write while notifications are down.
 */
const LOG_POLL_MS = 1_000;

/** Under the idle timeouts of common proxies (nginx's 60 s) and of the server itself. */
const SSE_KEEP_ALIVE_MS = 15_000;

/** The repository, telling `hint` after each write that committed: the log grew. */
function hintingWrites(repository: EntryRepository, hint: () => void): EntryRepository {
  return {
    ...repository,
    createEntry: async (entry) => {
      const stored = await repository.createEntry(entry);
      hint();
      return stored;
    },
    revoke: async (baseDid, version, revocation) => {
      const revoked = await repository.revoke(baseDid, version, revocation);
      hint();
      return revoked;
    },
  };
}

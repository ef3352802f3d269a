/**
 * All configuration, read from the environment once into one typed object. Nothing else in the
 * program reads process.env.
 */

export type ServerRole = "all" | "registry" | "auth";

/** pino's levels, most verbose first; `silent` writes nothing. */
export const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface RegistryConfig {
  readonly host: string;
  readonly port: number;
  readonly role: ServerRole;
  /** Postgres URL; empty means the embedded PGlite database in `dataDir`. */
  readonly databaseUrl: string;
  /**
   * Postgres URLs of streaming read replicas of `databaseUrl`; resolves and discovery read from
   * them, writes and reads that must see them from the primary. Empty: everything on the primary.
   */
  readonly databaseReadUrls: readonly string[];
  readonly dataDir: string;
  readonly databasePoolMax: number;
  readonly statementTimeoutMs: number;
  /** Longest wait to open a Postgres connection. */
  readonly databaseConnectTimeoutMs: number;
  /** Longest wait for a pooled Postgres connection, opening one included. */
  readonly databaseAcquireTimeoutMs: number;
  /**
   * Longest wait for Postgres to answer a query; when it passes, the connection is closed and the
   * call answers unavailable. Longer than every statement timeout, so that a slow statement is
   * cancelled by the server and only an unreachable server trips it.
   */
  readonly databaseQueryTimeoutMs: number;
  /** Longest /readyz (and gRPC health) waits for the database to answer before saying it is not ready. */
  readonly readinessTimeoutMs: number;
  /** How often the entry cache's LISTEN connection is checked, and how long a check may take. */
  readonly entryCacheHeartbeatMs: number;
  /** Apply migrations at start; when false, refuse to start on a schema that is behind. */
  readonly migrateOnStart: boolean;
  /**
   * Whether auth.v1.AdminService (root tokens through the running server, for a holder of the
   * admin credential it writes to the data directory) is served by the roles that issue tokens.
   * "auto" (ADMIN_API unset): only when the server holds the embedded database in a data directory,
   * which no other process can then open; true or false: always or never.
   */
  readonly adminApi: boolean | "auto";
  /** The server the CLI talks to: REGISTRY_URL, else this host's server on PORT (registryUrlFrom). */
  readonly registryUrl: string;
  readonly entryTypes: readonly string[];
  /** This server's public base URL. */
  readonly publicUrl: string;
  /** The token issuer's base URL: the `iss` of access tokens and where the JWKS is fetched. */
  readonly authUrl: string;
  /** The `aud` access tokens are issued for and verified against. */
  readonly tokenAudience: string;
  readonly tokenMaxTtlSeconds: number;
  /**
   * The issuer's Ed25519 private key as a JWK, when the operator keeps it outside the database
   * (a secrets manager); otherwise keys are created and rotated in the database.
   */
  readonly issuerPrivateJwk?: Readonly<Record<string, string>>;
  /** Largest request body accepted, in bytes. */
  readonly maxBodyBytes: number;
  /** How long HTTP caches may keep a resolve of name@version (Cache-Control max-age); 0: revalidate. */
  readonly resolveMaxAgeSeconds: number;
  /** Entry DIDs whose resolves and version lists are cached per process; 0 turns caching off. */
  readonly entryCacheSize: number;
  /** Most memory, in MiB, the per-process entry cache may take. */
  readonly entryCacheMb: number;
  /**
   * Read requests (resolves, version lists) whose answers are kept per process, as they arrived on
   * the wire; 0 turns it off. Needs the entry cache, whose invalidations it follows.
   */
  readonly answerCacheSize: number;
  /** Most memory, in MiB, the kept answers may take. */
  readonly answerCacheMb: number;
  /** Origins allowed by CORS; ["*"] allows any. */
  readonly corsOrigins: readonly string[];
  /**
   * Signs discovery page cursors; every replica must have the same. When unset the registry makes
   * one and keeps it in the database, where all replicas find it.
   */
  readonly cursorSecret?: string;
  /** How long a page cursor stays valid. */
  readonly cursorTtlSeconds: number;
  /** Longest a discovery query may run before it is cancelled. */
  readonly discoveryTimeoutMs: number;
  /** Most matches structured discover counts exactly for `total`; 0 counts every match. */
  readonly discoveryTotalLimit: number;
  /** Read requests per second allowed per client IP (token refill rate); 0 turns rate limiting off. */
  readonly rateLimitRps: number;
  /** Read requests a client IP may make at once before the rate applies (token bucket size). */
  readonly rateLimitBurst: number;
  /** Creates and revokes per second allowed per publisher (the token's subject); 0 turns write limiting off. */
  readonly writeRateLimitRps: number;
  /** Writes a publisher may make at once before the rate applies (token bucket size). */
  readonly writeRateLimitBurst: number;
  /** Token requests (POST /v1/tokens) per second allowed per client IP; 0 turns this limit off. */
  readonly tokenRateLimitRps: number;
  /** Token requests a client IP may make at once before the rate applies. */
  readonly tokenRateLimitBurst: number;
  /** Networks (CIDRs) of proxies whose X-Forwarded-For is believed; empty believes none. */
  readonly trustProxy: readonly string[];
  /** Redis URL for rate-limit buckets shared by replicas; empty uses the database instead. */
  readonly redisUrl: string;
  /** A new connection must send enough to tell its protocol (HTTP/1.1 or HTTP/2) within this. */
  readonly firstBytesTimeoutMs: number;
  /** HTTP/1.1: a request's whole header block must arrive within this of its first byte. */
  readonly headersTimeoutMs: number;
  /** A whole request, headers and body, must arrive within this (on HTTP/2, of its stream opening). */
  readonly requestTimeoutMs: number;
  /** A connection with no request in progress is closed after this (HTTP/2 sessions with a GOAWAY). */
  readonly idleTimeoutMs: number;
  /** HTTP/2 sessions are pinged this often; one that leaves a PING unanswered as long is dropped. 0: no pings. */
  readonly http2PingIntervalMs: number;
  /** Open connections per client address (an IPv6 /64), trusted proxies exempt; 0: no cap. */
  readonly maxConnectionsPerIp: number;
  /** Open connections in all; 0: no cap. */
  readonly maxConnections: number;
  /** Open change-feed streams (SSE and WatchChanges) per client address (an IPv6 /64); 0: no cap. */
  readonly maxStreamsPerIp: number;
  /** Open change-feed streams in all; 0: no cap. */
  readonly maxStreams: number;
  /** How long a change-feed stream may wait for its client to take what was written before it is ended. */
  readonly streamStallTimeoutMs: number;
  /** The most one page of the change log (and a stream's batch) may weigh, in bytes of entry state. */
  readonly changePageMaxBytes: number;
  /** On SIGTERM, how long requests already received may run before their connections are cut. */
  readonly shutdownGraceMs: number;
  /** The least severe log level written. */
  readonly logLevel: LogLevel;
  /** One access line per call (at info level). */
  readonly accessLog: boolean;
  /** Serve GET /metrics on this separate port (0: any free one); undefined serves it on the main port. */
  readonly metricsPort: number | undefined;
  /**
   * Where OpenTelemetry traces are sent (OTLP over HTTP, the full URL of the traces endpoint);
   * undefined turns tracing off. From OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or
   * OTEL_EXPORTER_OTLP_ENDPOINT with `/v1/traces` appended, as the OpenTelemetry spec defines.
   */
  readonly otlpTracesEndpoint: string | undefined;
  /** The `service.name` traces carry (OTEL_SERVICE_NAME). */
  readonly otelServiceName: string;
  /**
   * The share of calls that bring no trace context of their own that are traced, 0 to 1; a
   * caller's own sampling decision (its traceparent) always stands. From OTEL_TRACES_SAMPLER
   * (`parentbased_always_on`, the default; `parentbased_traceidratio` with OTEL_TRACES_SAMPLER_ARG;
   * `parentbased_always_off`), as the OpenTelemetry spec names them.
   */
  readonly otelSampleRatio: number;
  /**
   * The transparency log's origin line, which is also its key's name (LOG_ORIGIN); by default this
   * server's public host and "/log". It must name this registry uniquely: verifiers pin it.
   */
  readonly logOrigin: string;
  /**
   * The log's Ed25519 signing key, as the base64url of its 32-byte seed (LOG_SIGNING_KEY); unset,
   * the registry makes one and keeps it in the database, shared by every process.
   */
  readonly logSigningKey?: Uint8Array;
  /** How often the tree is brought up to date with the change log and a checkpoint signed (LOG_INTEGRATE_MS). */
  readonly logIntegrateMs: number;
}

export class ConfigError extends Error {}

type Env = Readonly<Record<string, string | undefined>>;

/** Where a client on this host finds the server listening on `port`, whatever HOST it listens on. */
export function localRegistryUrl(port: number): string {
  return `http://127.0.0.1:${port}`;
}

/**
 * The one reader of REGISTRY_URL, for the client commands and for root-token's admin API fallback
 * alike: REGISTRY_URL, else this host's server on PORT (8080 when unset); without a trailing slash.
 */
export function registryUrlFrom(env: Env): string {
  const given = env.REGISTRY_URL?.trim();
  if (given) return trimSlash(given);
  return localRegistryUrl(integer(env, "PORT", 8080, 0, 65535));
}

export function loadConfig(env: Env = process.env, overrides: Partial<RegistryConfig> = {}): RegistryConfig {
  const host = env.HOST ?? "127.0.0.1";
  const port = integer(env, "PORT", 8080, 0, 65535);
  const statementTimeoutMs = integer(env, "STATEMENT_TIMEOUT_MS", 5000, 1, 600_000);
  const discoveryTimeoutMs = integer(env, "DISCOVERY_TIMEOUT_MS", 3_000, 1, 600_000);
  const longestStatementMs = Math.max(statementTimeoutMs, discoveryTimeoutMs);
  const publicUrl = trimSlash(env.PUBLIC_URL ?? `http://${host.includes(":") ? `[${host}]` : host}:${port}`);
  const config: RegistryConfig = {
    host,
    port,
    role: role(env.REGISTRY_ROLE ?? "all"),
    databaseUrl: env.DATABASE_URL ?? "",
    databaseReadUrls: readUrls(env),
    dataDir: env.REGISTRY_DATA_DIR ?? "./.registry",
    databasePoolMax: integer(env, "DATABASE_POOL_MAX", 16, 1, 1000),
    statementTimeoutMs,
    databaseConnectTimeoutMs: integer(env, "DATABASE_CONNECT_TIMEOUT_MS", 2_000, 1, 600_000),
    databaseAcquireTimeoutMs: integer(env, "DATABASE_ACQUIRE_TIMEOUT_MS", 3_000, 1, 600_000),
    databaseQueryTimeoutMs: queryTimeout(env, longestStatementMs),
    readinessTimeoutMs: integer(env, "READINESS_TIMEOUT_MS", 1_000, 1, 600_000),
    entryCacheHeartbeatMs: integer(env, "ENTRY_CACHE_HEARTBEAT_MS", 2_000, 10, 600_000),
    migrateOnStart: boolean(env, "MIGRATE_ON_START", true),
    adminApi: env.ADMIN_API === undefined || env.ADMIN_API === "" || env.ADMIN_API === "auto" ? "auto" : boolean(env, "ADMIN_API", false),
    registryUrl: registryUrlFrom(env),
    entryTypes: list(env.REGISTRY_ENTRY_TYPES ?? "skill,agent", "REGISTRY_ENTRY_TYPES"),
    publicUrl,
    authUrl: trimSlash(env.AUTH_URL ?? publicUrl),
    tokenAudience: env.TOKEN_AUDIENCE ?? "registry",
    tokenMaxTtlSeconds: integer(env, "AUTH_MAX_TTL_SECONDS", 3600, 1, 86_400),
    issuerPrivateJwk: privateJwk(env.AUTH_ISSUER_PRIVATE_JWK),
    maxBodyBytes: integer(env, "MAX_BODY_BYTES", 256 * 1024, 1024, 64 * 1024 * 1024),
    resolveMaxAgeSeconds: integer(env, "RESOLVE_MAX_AGE_SECONDS", 60, 0, 86_400),
    entryCacheSize: integer(env, "ENTRY_CACHE_SIZE", 50_000, 0, 10_000_000),
    entryCacheMb: integer(env, "ENTRY_CACHE_MB", 64, 1, 65_536),
    answerCacheSize: integer(env, "ANSWER_CACHE_SIZE", 10_000, 0, 10_000_000),
    answerCacheMb: integer(env, "ANSWER_CACHE_MB", 32, 1, 65_536),
    corsOrigins: list(env.CORS_ORIGINS ?? "*", "CORS_ORIGINS"),
    cursorSecret: cursorSecret(env.REGISTRY_CURSOR_SECRET),
    cursorTtlSeconds: integer(env, "REGISTRY_CURSOR_TTL_SECONDS", 86_400, 1, 30 * 86_400),
    discoveryTimeoutMs,
    discoveryTotalLimit: integer(env, "DISCOVERY_TOTAL_LIMIT", 1_000, 0, 100_000_000),
    rateLimitRps: rate(env, "RATE_LIMIT_RPS", 100),
    rateLimitBurst: integer(env, "RATE_LIMIT_BURST", 200, 1, 1_000_000),
    writeRateLimitRps: rate(env, "WRITE_RATE_LIMIT_RPS", 10),
    writeRateLimitBurst: integer(env, "WRITE_RATE_LIMIT_BURST", 100, 1, 1_000_000),
    tokenRateLimitRps: rate(env, "TOKEN_RATE_LIMIT_RPS", 1),
    tokenRateLimitBurst: integer(env, "TOKEN_RATE_LIMIT_BURST", 10, 1, 1_000_000),
    trustProxy: env.TRUST_PROXY === undefined || env.TRUST_PROXY.trim() === "" ? [] : list(env.TRUST_PROXY, "TRUST_PROXY"),
    redisUrl: env.REDIS_URL ?? "",
    firstBytesTimeoutMs: integer(env, "FIRST_BYTES_TIMEOUT_MS", 10_000, 1, 3_600_000),
    headersTimeoutMs: integer(env, "HEADERS_TIMEOUT_MS", 10_000, 1, 3_600_000),
    requestTimeoutMs: integer(env, "REQUEST_TIMEOUT_MS", 30_000, 1, 3_600_000),
    idleTimeoutMs: integer(env, "IDLE_TIMEOUT_MS", 65_000, 1, 3_600_000),
    http2PingIntervalMs: integer(env, "HTTP2_PING_INTERVAL_MS", 30_000, 0, 3_600_000),
    maxConnectionsPerIp: integer(env, "MAX_CONNECTIONS_PER_IP", 256, 0, 1_000_000),
    maxConnections: integer(env, "MAX_CONNECTIONS", 4_000, 0, 1_000_000),
    maxStreamsPerIp: integer(env, "MAX_STREAMS_PER_IP", 32, 0, 1_000_000),
    maxStreams: integer(env, "MAX_STREAMS", 2_000, 0, 1_000_000),
    streamStallTimeoutMs: integer(env, "STREAM_STALL_TIMEOUT_MS", 30_000, 100, 3_600_000),
    changePageMaxBytes: integer(env, "CHANGE_PAGE_MAX_BYTES", 2 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    shutdownGraceMs: integer(env, "SHUTDOWN_GRACE_MS", 5_000, 0, 600_000),
    logLevel: logLevel(env.LOG_LEVEL),
    accessLog: boolean(env, "ACCESS_LOG", true),
    metricsPort: env.METRICS_PORT === undefined || env.METRICS_PORT === "" ? undefined : integer(env, "METRICS_PORT", 0, 0, 65535),
    otlpTracesEndpoint: otlpTracesEndpoint(env),
    otelServiceName: env.OTEL_SERVICE_NAME?.trim() || "registry",
    otelSampleRatio: sampleRatio(env),
    logOrigin: logOrigin(env.LOG_ORIGIN, publicUrl),
    logSigningKey: logSigningKey(env.LOG_SIGNING_KEY),
    logIntegrateMs: integer(env, "LOG_INTEGRATE_MS", 1_000, 10, 600_000),
    ...overrides,
  };
  if (config.headersTimeoutMs > config.requestTimeoutMs) {
    throw new ConfigError(
      `HEADERS_TIMEOUT_MS (${config.headersTimeoutMs}) must not exceed REQUEST_TIMEOUT_MS (${config.requestTimeoutMs}): the headers are part of the request`,
    );
  }
  for (const type of config.entryTypes) {
    if (!/^[a-z0-9][a-z0-9._-]*$/.test(type)) {
      throw new ConfigError(`REGISTRY_ENTRY_TYPES: "${type}" is not a valid entry type`);
    }
  }
  return config;
}

export function role(value: string): ServerRole {
  if (value === "all" || value === "registry" || value === "auth") return value;
  throw new ConfigError(`role must be all, registry or auth, not "${value}"`);
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, not "${text}"`);
  }
  return value;
}

/** Requests per second for a token bucket: fractions allowed (0.1 is one every 10 s), 0 turns it off. */
function rate(env: Env, name: string, fallback: number): number {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text.trim()) || !(value >= 0 && value <= 1_000_000)) {
    throw new ConfigError(`${name} must be a number of requests per second from 0 to 1000000 (0 turns the limit off), not "${text}"`);
  }
  return value;
}

function queryTimeout(env: Env, longestStatementMs: number): number {
  const value = integer(env, "DATABASE_QUERY_TIMEOUT_MS", longestStatementMs + 1_000, 1, 601_000);
  if (value <= longestStatementMs) {
    throw new ConfigError(
      `DATABASE_QUERY_TIMEOUT_MS (${value}) must be longer than STATEMENT_TIMEOUT_MS and DISCOVERY_TIMEOUT_MS (${longestStatementMs}), so that slow statements are cancelled by the server`,
    );
  }
  return value;
}

/** DATABASE_READ_URL: one or more postgres:// URLs, comma-separated; only next to DATABASE_URL. */
function readUrls(env: Env): string[] {
  const text = env.DATABASE_READ_URL;
  if (text === undefined || text.trim() === "") return [];
  if (env.DATABASE_URL === undefined || env.DATABASE_URL === "") {
    throw new ConfigError(
      "DATABASE_READ_URL names read replicas of DATABASE_URL; set DATABASE_URL too (the embedded database has no replicas)",
    );
  }
  const urls = list(text, "DATABASE_READ_URL");
  for (const url of urls) {
    if (!/^postgres(ql)?:\/\//.test(url))
      throw new ConfigError("DATABASE_READ_URL: every URL must start with postgres:// (they are comma-separated)");
  }
  return urls;
}

/** OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as is; the generic endpoint gets the signal's path. */
function otlpTracesEndpoint(env: Env): string | undefined {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const generic = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const endpoint = traces || (generic ? `${trimSlash(generic)}/v1/traces` : undefined);
  if (endpoint === undefined) return undefined;
  if (!/^https?:\/\//.test(endpoint)) throw new ConfigError(`the OTLP traces endpoint must be an http(s) URL, not "${endpoint}"`);
  return endpoint;
}

/** The root sampler's ratio, for the parent-based samplers the OpenTelemetry spec defines. */
function sampleRatio(env: Env): number {
  const sampler = env.OTEL_TRACES_SAMPLER?.trim() || "parentbased_always_on";
  if (sampler === "parentbased_always_on") return 1;
  if (sampler === "parentbased_always_off") return 0;
  if (sampler !== "parentbased_traceidratio") {
    throw new ConfigError(
      `OTEL_TRACES_SAMPLER must be parentbased_always_on, parentbased_traceidratio or parentbased_always_off, not "${sampler}" (a caller's traceparent always decides for its own calls)`,
    );
  }
  const text = env.OTEL_TRACES_SAMPLER_ARG?.trim() || "1";
  const ratio = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || ratio > 1) {
    throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, not "${text}"`);
  }
  return ratio;
}

function logLevel(text: string | undefined): LogLevel {
  if (text === undefined || text === "") return "info";
  const level = LOG_LEVELS.find((name) => name === text.toLowerCase());
  if (level === undefined) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, not "${text}"`);
  return level;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  if (text === "true" || text === "1") return true;
  if (text === "false" || text === "0") return false;
  throw new ConfigError(`${name} must be true or false, not "${text}"`);
}

function privateJwk(text: string | undefined): Record<string, string> | undefined {
  if (text === undefined || text === "") return undefined;
  let jwk: unknown;
  try {
    jwk = JSON.parse(text);
  } catch {
    throw new ConfigError("AUTH_ISSUER_PRIVATE_JWK must be a JSON Web Key");
  }
  const { kty, crv, d, x } = (jwk ?? {}) as Record<string, unknown>;
  if (kty !== "OKP" || crv !== "Ed25519" || typeof d !== "string" || typeof x !== "string") {
    throw new ConfigError('AUTH_ISSUER_PRIVATE_JWK must be an Ed25519 private key: {"kty":"OKP","crv":"Ed25519","x":...,"d":...}');
  }
  return jwk as Record<string, string>;
}

/** A checkpoint origin is one line with no spaces or "+", since it also names the note key. */
function logOrigin(text: string | undefined, publicUrl: string): string {
  const origin = text?.trim() || `${new URL(publicUrl).host}/log`;
  if (/[\s+]/.test(origin)) throw new ConfigError(`LOG_ORIGIN must have no spaces or "+", not "${origin}"`);
  return origin;
}

function logSigningKey(text: string | undefined): Uint8Array | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  const seed = Buffer.from(text.trim(), "base64url");
  if (seed.length !== 32 || seed.toString("base64url") !== text.trim()) {
    throw new ConfigError(
      "LOG_SIGNING_KEY must be the unpadded base64url of a 32-byte Ed25519 seed (`registry key generate` prints one as privateKey)",
    );
  }
  return new Uint8Array(seed);
}

function cursorSecret(text: string | undefined): string | undefined {
  if (text === undefined || text === "") return undefined;
  if (Buffer.byteLength(text, "utf8") < 32) {
    throw new ConfigError("REGISTRY_CURSOR_SECRET must be at least 32 bytes (e.g. openssl rand -base64 48)");
  }
  return text;
}

function list(text: string, name: string): string[] {
  const items = text
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
  if (items.length === 0) throw new ConfigError(`${name} must list at least one value`);
  return items;
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, "");
}

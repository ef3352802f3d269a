import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromJson } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { startRegistry, type RunningRegistry } from "../../src/app.js";
import { createKnexAuthRepository } from "../../src/storage/knex-auth-repository.js";
import { generateRootToken, generateRootTokenId, hashRootToken } from "../../src/auth/root-tokens.js";
import { ConfigError, loadConfig, type RegistryConfig } from "../../src/config.js";
import { pino } from "pino";
import { createLogger, describeError, type AccessRecord } from "../../src/logger.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { createPublisher, type TestPublisher } from "../support/registry-fixture.js";
import { PROTOCOLS, registryClient, type Protocol } from "../support/protocol-clients.js";
import { grpcJsClientConstructor } from "../support/grpc-js-client.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { RegistryService, ResolveEntryRequestSchema } from "../../gen/registry/v1/registry_service_pb.js";
import { changesHeard, sample, untilChangesHeard } from "../support/metric-samples.js";

/**
 * Access lines, request ids and metrics, through a running registry whose logger writes to the
 * test: one line per call on every protocol (Connect's adapter included), credentials never in
 * the log, X-Request-Id believed only from a trusted proxy and returned on every answer, and the
 * counters on /metrics moving with the calls, on the main port or on METRICS_PORT.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SCOPE = "registry.publish.skill";

interface ObservedRegistry {
  readonly url: string;
  readonly running: RunningRegistry;
  /** Every line the server logged so far, parsed. */
  readonly lines: Record<string, any>[];
  /** The raw text of every line logged so far. */
  readonly text: () => string;
  /** The access lines logged since `from` (a length of `lines`). */
  calls(from: number): Record<string, any>[];
  accessToken(subject: string): Promise<string>;
  close(): Promise<void>;
}

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

async function startObserved(overrides: Partial<RegistryConfig> = {}): Promise<ObservedRegistry> {
  const raw: string[] = [];
  const lines: Record<string, any>[] = [];
  const logger = createLogger((line) => {
    raw.push(line);
    lines.push(JSON.parse(line));
  });
  // Reads limited (generously), so limiter decisions are counted; nothing here comes near it.
  const config = loadConfig({}, { port: 0, host: "127.0.0.1", rateLimitRps: 10_000, rateLimitBurst: 10_000, ...overrides });
  const running = await startRegistry({ ...config, authUrl: "http://registry.test" }, { logger, database: db.database });
  const repository = createKnexAuthRepository(database());
  return {
    url: running.url,
    running,
    lines,
    text: () => raw.join(""),
    calls: (from) => lines.slice(from).filter((line) => line.msg === "call"),
    async accessToken(subject) {
      const root = generateRootToken();
      await repository.createRootToken({
        id: generateRootTokenId(),
        tokenHash: hashRootToken(root),
        subject,
        scopes: [SCOPE],
        description: "test",
      });
      const response = await fetch(`${running.url}/v1/tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${root}`, "content-type": "application/json" },
        body: JSON.stringify({ scopes: [SCOPE] }),
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { accessToken: string }).accessToken;
    },
    close: () => running.close(),
  };
}

function database() {
  return db.database.knex;
}

async function eventually<T>(read: () => T | undefined, what: string, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function scrape(url: string): Promise<string> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return response.text();
}

const CREATE = "registry.v1.RegistryService/CreateEntry";
const RESOLVE = "registry.v1.RegistryService/ResolveEntry";

describe("access lines", () => {
  let registry: ObservedRegistry;
  let publisher: TestPublisher;
  let token: string;

  beforeAll(async () => {
    registry = await startObserved();
    publisher = await createPublisher();
    token = await registry.accessToken(publisher.did);
  });
  afterAll(async () => {
    await registry?.close();
  });

  it("names the root token's holder as the principal of a token request", async () => {
    const from = registry.lines.length;
    await registry.accessToken(publisher.did);
    expect(registry.calls(from)).toEqual([
      expect.objectContaining({ method: "auth.v1.TokenService/IssueToken", code: "ok", principal: publisher.did }),
    ]);
  });

  describe.each(PROTOCOLS)("over %s", (protocol: Protocol) => {
    it("one line per call: method, protocol, code and status, duration, client, principal, request id", async () => {
      const client = registryClient(protocol, registry.url);
      try {
        const name = `logged-${protocol}`;
        let from = registry.lines.length;
        const created = await client.create(await publisher.entry(name, "1.0.0"), token);
        expect(created.code).toBe("ok");
        const [createLine, ...moreAfterCreate] = registry.calls(from);
        expect(moreAfterCreate).toEqual([]);
        expect(createLine).toMatchObject({
          level: "info",
          msg: "call",
          protocol,
          method: CREATE,
          code: "ok",
          status: protocol === "rest" ? 201 : 200,
          client: "127.0.0.1",
          principal: publisher.did,
        });
        expect(createLine!.requestId).toMatch(UUID);
        expect(createLine!.ms).toBeGreaterThan(0);
        expect(typeof createLine!.time).toBe("string");
        if (protocol === "rest") expect(createLine!.route).toBe("POST /v1/entries");

        from = registry.lines.length;
        const missing = await client.resolve(`did:reg:main:skill:${name}-missing`);
        expect(missing.code).toBe("not_found");
        const [missLine, ...moreAfterMiss] = registry.calls(from);
        expect(moreAfterMiss).toEqual([]);
        expect(missLine).toMatchObject({ protocol, method: RESOLVE, code: "not_found", client: "127.0.0.1" });
        // gRPC's status travels in trailers; the HTTP answer itself is a 200.
        expect(missLine!.status).toBe(protocol === "grpc" || protocol === "grpc-web" ? 200 : 404);
        expect(missLine).not.toHaveProperty("principal");

        from = registry.lines.length;
        const refused = await client.create(await publisher.entry(name, "1.0.1"), "not-a-token");
        expect(refused.code).toBe("unauthenticated");
        expect(registry.calls(from)).toEqual([expect.objectContaining({ protocol, method: CREATE, code: "unauthenticated" })]);
        expect(registry.calls(from)[0]).not.toHaveProperty("principal");
      } finally {
        client.close();
      }
    });
  });

  it.each([
    ["connect", "HTTP/1.1", () => createConnectTransport({ baseUrl: registry.url, httpVersion: "1.1" })],
    ["grpc", "HTTP/2", () => createGrpcTransport({ baseUrl: registry.url })],
  ] as const)(
    "a streaming call through Connect's adapter (%s, %s) gets its line when the client ends it",
    async (protocol, _version, transport) => {
      const health = createClient(Health, transport());
      const from = registry.lines.length;
      const abort = new AbortController();
      for await (const response of health.watch({ service: "" }, { signal: abort.signal })) {
        expect(response.status).toBeGreaterThan(0);
        break;
      }
      abort.abort();
      const line = await eventually(() => registry.calls(from)[0], "the Watch call's access line");
      expect(line).toMatchObject({ protocol, method: "grpc.health.v1.Health/Watch", code: "canceled", status: 200, client: "127.0.0.1" });
      expect(line.requestId).toMatch(UUID);
    },
  );

  it("a request that matches no route is logged with its path; probes and scrapes are not logged", async () => {
    const from = registry.lines.length;
    expect((await fetch(`${registry.url}/no/such/route`)).status).toBe(404);
    expect((await fetch(`${registry.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${registry.url}/metrics`)).status).toBe(200);
    expect(registry.calls(from)).toEqual([
      expect.objectContaining({ protocol: "rest", path: "/no/such/route", code: "not_found", status: 404 }),
    ]);
  });

  it("never writes a credential: not the root token, the access token, nor a bad one", async () => {
    const from = registry.lines.length;
    const subject = (await createPublisher()).did;
    const secret = await registry.accessToken(subject);
    const bogus = "Bearer bogus.credential.value";
    await fetch(`${registry.url}/v1/entries`, {
      method: "POST",
      headers: { authorization: bogus, "content-type": "application/json" },
      body: "{}",
    });
    const client = registryClient("grpc", registry.url);
    try {
      await client.create(await publisher.entry("never-logged", "1.0.0"), secret);
    } finally {
      client.close();
    }
    const logged = registry.lines
      .slice(from)
      .map((line) => JSON.stringify(line))
      .join("\n");
    expect(registry.calls(from).length).toBeGreaterThanOrEqual(3);
    expect(logged).not.toContain(secret);
    expect(logged).not.toContain("bogus.credential.value");
    expect(registry.text()).not.toMatch(/Bearer /i);
  });
});

describe("the logger", () => {
  it("redacts authorization and cookies at any depth, in fields and in errors' causes", () => {
    const lines: string[] = [];
    const logger = createLogger((line) => lines.push(line));
    logger.info("headers", {
      authorization: "Bearer top",
      request: { headers: { Authorization: "Bearer nested", cookie: "session=1", accept: "*/*" } },
    });
    const cause = Object.assign(new Error("upstream said no"), { config: { headers: { authorization: "Bearer in-cause" } } });
    logger.error("request failed", describeError(new Error("call failed", { cause })));
    const text = lines.join("");
    expect(text).not.toContain("Bearer");
    expect(text).not.toContain("session=1");
    const [fields, error] = lines.map((line) => JSON.parse(line));
    expect(fields.request.headers).toEqual({ Authorization: "[redacted]", cookie: "[redacted]", accept: "*/*" });
    // The error and its cause, each with message and stack.
    expect(error).toMatchObject({
      level: "error",
      msg: "request failed",
      err: { message: "call failed", cause: { message: "upstream said no" } },
    });
    expect(error.err.cause.stack).toContain("upstream said no");
  });

  it("writes access lines byte for byte as pino writes the same record at info", () => {
    const lines: string[] = [];
    const logger = createLogger((line) => lines.push(line));
    const reference: string[] = [];
    const referenceLogger = pino(
      {
        timestamp: () => (lines.length === 0 ? "" : `,"time":"${JSON.parse(lines.at(-1) as string).time}"`),
        formatters: { level: (label) => ({ level: label }) },
      },
      { write: (line: string) => void reference.push(line) },
    );
    const records: AccessRecord[] = [
      {
        requestId: "r-1",
        protocol: "rest",
        method: "registry.v1.RegistryService/ResolveEntry",
        route: "GET /v1/entries/{did}",
        code: "ok",
        status: 200,
        ms: 0.68,
        client: "127.0.0.1",
      },
      {
        requestId: "r-2",
        protocol: "grpc",
        method: "registry.v1.RegistryService/CreateEntry",
        code: "invalid_argument",
        status: 200,
        ms: 12,
        client: "::1",
        principal: "did:key:z6Mk",
      },
      { requestId: "r-3", protocol: "http", path: '/a"b\\c\u0001\u00e9\ud83d\ude00 x', code: "canceled", ms: 1234.5, client: "" },
      { requestId: "r-4", protocol: "rest", path: "x".repeat(200), code: "unknown", status: 404, ms: 0, client: "10.0.0.1" },
    ];
    for (const record of records) {
      logger.access(record);
      referenceLogger.info(record, "call");
      expect(lines.at(-1)).toBe(reference.at(-1));
    }
  });

  it("writes only lines at or above LOG_LEVEL, which must name a level", () => {
    const lines: string[] = [];
    const logger = createLogger((line) => lines.push(line), { level: loadConfig({ LOG_LEVEL: "warn" }).logLevel });
    logger.info("quiet");
    logger.access({ requestId: "r", protocol: "rest", code: "ok", status: 200, ms: 1, client: "127.0.0.1" });
    logger.warn("loud");
    expect(lines.map((line) => JSON.parse(line).msg)).toEqual(["loud"]);
    expect(() => loadConfig({ LOG_LEVEL: "verbose" })).toThrow(ConfigError);
  });
});

describe("request ids", () => {
  const grpcResolveHeaders = (url: string, requestId: string) =>
    new Promise<grpc.Metadata>((resolve, reject) => {
      const Client = grpcJsClientConstructor(RegistryService);
      const client = new Client(new URL(url).host, grpc.credentials.createInsecure()) as any;
      const metadata = new grpc.Metadata();
      metadata.set("x-request-id", requestId);
      const request = fromJson(ResolveEntryRequestSchema, { did: "did:reg:main:skill:request-id" });
      client.ResolveEntry(request, metadata, (error: grpc.ServiceError | null) => {
        client.close();
        // Not found: an error before any message is all headers (trailers-only), so they come with it.
        if (error === null) reject(new Error("expected not_found"));
        else resolve(error.metadata);
      });
    });

  const connectResolve = (url: string, requestId: string) =>
    fetch(`${url}/${RESOLVE}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": requestId },
      body: JSON.stringify({ did: "did:reg:main:skill:request-id" }),
    });

  it("are made for every answer, whatever X-Request-Id a client sends, when no proxy is trusted", async () => {
    const registry = await startObserved();
    try {
      const from = registry.lines.length;
      const rest = await fetch(`${registry.url}/v1/entries/did:reg:main:skill:request-id`, {
        headers: { "x-request-id": "client-chosen" },
      });
      const connect = await connectResolve(registry.url, "client-chosen");
      const health = await fetch(`${registry.url}/healthz`, { headers: { "x-request-id": "client-chosen" } });
      const grpcHeaders = await grpcResolveHeaders(registry.url, "client-chosen");
      const ids = [
        rest.headers.get("x-request-id"),
        connect.headers.get("x-request-id"),
        health.headers.get("x-request-id"),
        grpcHeaders.get("x-request-id")[0],
      ];
      for (const id of ids) expect(id).toMatch(UUID);
      expect(new Set(ids).size).toBe(4);
      // The line of each call carries the id its answer did (the probe has no line).
      expect(registry.calls(from).map((line) => line.requestId)).toEqual([ids[0], ids[1], ids[3]]);
    } finally {
      await registry.close();
    }
  });

  it("are taken from a trusted proxy's X-Request-Id when it is a sane token, and returned", async () => {
    const registry = await startObserved({ trustProxy: ["loopback"] });
    try {
      const from = registry.lines.length;
      const rest = await fetch(`${registry.url}/v1/entries/did:reg:main:skill:request-id`, {
        headers: { "x-request-id": "proxy-id.1:a_b" },
      });
      expect(rest.headers.get("x-request-id")).toBe("proxy-id.1:a_b");
      expect((await connectResolve(registry.url, "proxy-id-2")).headers.get("x-request-id")).toBe("proxy-id-2");
      expect((await grpcResolveHeaders(registry.url, "proxy-id-3")).get("x-request-id")).toEqual(["proxy-id-3"]);
      expect(registry.calls(from).map((line) => line.requestId)).toEqual(["proxy-id.1:a_b", "proxy-id-2", "proxy-id-3"]);

      for (const insane of ["has space", "x".repeat(129), 'quote"d', "newline%0a"]) {
        const answer = await fetch(`${registry.url}/v1/entries/did:reg:main:skill:request-id`, { headers: { "x-request-id": insane } });
        expect(answer.headers.get("x-request-id")).toMatch(UUID);
      }
    } finally {
      await registry.close();
    }
  });
});

describe("metrics", () => {
  it("on the main port: calls by method, protocol and code, cache hits, limiter decisions, pool, event loop, process", async () => {
    const registry = await startObserved();
    try {
      expect(registry.running.metricsUrl).toBe(`${registry.url}/metrics`);
      const publisher = await createPublisher();
      const token = await registry.accessToken(publisher.did);
      const rest = registryClient("rest", registry.url);
      const heard = await changesHeard(registry.running.metricsUrl);
      expect((await rest.create(await publisher.entry("counted", "1.0.0"), token)).code).toBe("ok");
      // On Postgres the create echoes back through the change feed (counted), and would drop a gRPC answer kept before it.
      await untilChangesHeard(registry.running.metricsUrl, heard + 1);
      const did = "did:reg:main:skill:counted";
      const grpcCount = `registry_rpc_duration_seconds_count{method="${RESOLVE}",protocol="grpc",code="ok"}`;
      const hits = 'registry_entry_cache_reads_total{result="hit"}';
      const keptHits = 'registry_answer_cache_reads_total{result="hit"}';
      const allowed = 'registry_rate_limit_decisions_total{policy="reads",decision="allowed"}';
      const before = await scrape(registry.running.metricsUrl);

      const grpcClient = registryClient("grpc", registry.url);
      try {
        expect((await grpcClient.resolve(did)).code).toBe("ok");
        expect((await grpcClient.resolve(did)).code).toBe("ok");
      } finally {
        grpcClient.close();
      }
      // The same DID asked over REST is the same request, whatever the protocol: its answer was kept.
      expect((await rest.resolve(did)).code).toBe("ok");
      expect((await rest.resolve(`${did}-missing`)).code).toBe("not_found");
      const after = await scrape(registry.running.metricsUrl);

      expect(sample(after, grpcCount) - sample(before, grpcCount)).toBe(2);
      expect(sample(after, `registry_rpc_duration_seconds_count{method="${RESOLVE}",protocol="rest",code="not_found"}`)).toBe(1);
      expect(sample(after, `registry_rpc_duration_seconds_count{method="${CREATE}",protocol="rest",code="ok"}`)).toBe(1);
      expect(sample(after, `registry_rpc_duration_seconds_bucket{le="+Inf",method="${RESOLVE}",protocol="grpc",code="ok"}`)).toBe(2);
      // The first gRPC resolve ran the handler and kept its answer; the second, and REST's, were answered from it.
      expect(sample(after, keptHits) - sample(before, keptHits)).toBe(2);
      expect(sample(after, hits) - sample(before, hits)).toBe(0);
      expect(sample(after, 'registry_entry_cache_reads_total{result="miss"}')).toBeGreaterThanOrEqual(2);
      expect(sample(after, allowed) - sample(before, allowed)).toBe(4);
      expect(sample(after, 'registry_db_pool_connections_max{pool="primary"}')).toBeGreaterThanOrEqual(1);
      expect(after).toMatch(/^registry_db_pool_pending_acquires\{pool="primary"\} \d+$/m);
      expect(after).toMatch(/^registry_entry_cache_entries \d+$/m);
      expect(after).toMatch(/^nodejs_eventloop_lag_seconds [\d.e-]+$/m);
      expect(after).toMatch(/^process_cpu_seconds_total [\d.e-]+$/m);
    } finally {
      await registry.close();
    }
  });

  it("on METRICS_PORT when set, and then not on the main port", async () => {
    const registry = await startObserved({ metricsPort: 0 });
    try {
      const metricsUrl = new URL(registry.running.metricsUrl);
      expect(metricsUrl.port).not.toBe(new URL(registry.url).port);
      expect(metricsUrl.pathname).toBe("/metrics");
      expect((await fetch(`${registry.url}/v1/entries/did:reg:main:skill:admin-port`)).status).toBe(404);
      const text = await scrape(metricsUrl.href);
      expect(sample(text, `registry_rpc_duration_seconds_count{method="${RESOLVE}",protocol="rest",code="not_found"}`)).toBe(1);
      expect((await fetch(`${registry.url}/metrics`)).status).toBe(404);
      expect((await fetch(`${metricsUrl.origin}/v1/entries/did:reg:main:skill:admin-port`)).status).toBe(404);
    } finally {
      await registry.close();
    }
  });

  it("ACCESS_LOG=false writes no access lines, and the calls are still counted", async () => {
    const registry = await startObserved({ accessLog: loadConfig({ ACCESS_LOG: "false" }).accessLog });
    try {
      const from = registry.lines.length;
      expect((await fetch(`${registry.url}/v1/entries/did:reg:main:skill:quiet`)).status).toBe(404);
      expect(registry.calls(from)).toEqual([]);
      const text = await scrape(registry.running.metricsUrl);
      expect(sample(text, `registry_rpc_duration_seconds_count{method="${RESOLVE}",protocol="rest",code="not_found"}`)).toBe(1);
    } finally {
      await registry.close();
    }
  });
});

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { fromJson, toJson } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { startRegistry } from "../../src/app.js";
import { loadConfig, type RegistryConfig } from "../../src/config.js";
import { createLogger } from "../../src/logger.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { createPublisher, startTestRegistry, type TestPublisher } from "../support/registry-fixture.js";
import { grpcJsClientConstructor } from "../support/grpc-js-client.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { RegistryService, ResolveEntryRequestSchema, ResolveEntryResponseSchema } from "../../gen/registry/v1/registry_service_pb.js";

/**
 * OpenTelemetry traces through a running registry whose OTLP endpoint is an HTTP receiver this
 * file runs, decoding what the exporter sends (OTLP/JSON). The batch processor holds spans until
 * its next export, and close() flushes it: each test closes its registry before reading the spans,
 * which proves the flush on close as it goes.
 */

const SCOPE = "registry.publish.skill";
const RESOLVE = "registry.v1.RegistryService/ResolveEntry";
const CREATE = "registry.v1.RegistryService/CreateEntry";
const SERVER = 2;
const CLIENT = 3;
const STATUS_ERROR = 2;

/** A span as the receiver decoded it, attributes as plain values. */
interface ExportedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly attributes: Record<string, unknown>;
  readonly status: { code?: number; message?: string };
  readonly resource: Record<string, unknown>;
}

interface OtlpReceiver {
  readonly url: string;
  /** Each export request's path and content type, in order. */
  readonly requests: { path: string; contentType: string | undefined }[];
  readonly spans: ExportedSpan[];
  close(): Promise<void>;
}

let db: TestDatabase;
let receiver: OtlpReceiver;
let publisher: TestPublisher;
let token: string;
let did: string;
let entrySignature: string;

beforeAll(async () => {
  db = await createTestDatabase();
  receiver = await startOtlpReceiver();
  // The entry and the token come from an untraced registry on the same database: tokens verify
  // against the issuer keys kept there, whichever registry issued them.
  const setup = await startTestRegistry(db.database);
  try {
    publisher = await createPublisher();
    token = await setup.accessToken(publisher.did, [SCOPE]);
    const entry = await publisher.entry("traced", "1.0.0");
    const created = await publish(setup.url, entry);
    expect(created.status).toBe(201);
    did = entry.entryDid;
    entrySignature = entry.signature;
  } finally {
    await setup.close();
  }
});

afterEach(() => {
  receiver.requests.length = 0;
  receiver.spans.length = 0;
});

afterAll(async () => {
  await receiver?.close();
  await db?.drop();
});

describe("with an OTLP endpoint", () => {
  it("gives a REST resolve a server span named after its RPC, with its route, and its query as a child", async () => {
    const registry = await startTraced();
    const response = await fetch(`${registry.url}/v1/entries/${encodeURIComponent(did)}`);
    expect(response.status).toBe(200);
    const requestId = response.headers.get("x-request-id");
    await registry.close();

    expect(receiver.requests.every((request) => request.path === "/v1/traces" && request.contentType === "application/json")).toBe(true);
    const span = onlySpan((s) => s.name === RESOLVE);
    expect(span.kind).toBe(SERVER);
    expect(span.attributes).toMatchObject({
      "http.request.method": "GET",
      "http.route": "/v1/entries/{did}",
      "http.response.status_code": 200,
      "rpc.method": RESOLVE,
      "rpc.status_code": "OK",
      "registry.protocol": "rest",
      "registry.request_id": requestId,
      "client.address": "127.0.0.1",
      "network.protocol.version": "1.1",
    });
    expect(span.attributes).not.toHaveProperty("rpc.system.name");
    expect(span.status.code ?? 0).not.toBe(STATUS_ERROR);
    expect(span.resource["service.name"]).toBe("registry-under-test");

    const queries = childrenOf(span);
    expect(queries.length).toBeGreaterThan(0);
    for (const query of queries) {
      expect(query.kind).toBe(CLIENT);
      expect(query.traceId).toBe(span.traceId);
      expect(query.attributes).toMatchObject({
        "db.system.name": "postgresql",
        "db.operation.name": "SELECT",
        "db.client.connection.pool.name": "primary",
      });
      // Placeholders, never the values bound to them.
      expect(query.attributes["db.query.text"]).toMatch(/^select .*\$1/i);
      expect(String(query.attributes["db.query.text"])).not.toContain(did);
    }
  });

  it("gives a gRPC call a server span that continues the caller's trace (traceparent), its queries in the same trace", async () => {
    const registry = await startTraced();
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const callerSpanId = "00f067aa0ba902b7";
    const client = grpcClient(registry.url);
    try {
      const metadata = new grpc.Metadata();
      metadata.set("traceparent", `00-${traceId}-${callerSpanId}-01`);
      metadata.set("tracestate", "vendor=value");
      const resolved = await resolveOverGrpc(client, did, metadata);
      expect(resolved.entry?.entryDid).toBe(did);
    } finally {
      client.close();
    }
    await registry.close();

    const span = onlySpan((s) => s.name === RESOLVE);
    expect(span.traceId).toBe(traceId);
    expect(span.parentSpanId).toBe(callerSpanId);
    expect(span.kind).toBe(SERVER);
    expect(span.attributes).toMatchObject({
      "rpc.system.name": "grpc",
      "rpc.method": RESOLVE,
      "rpc.status_code": "OK",
      "registry.protocol": "grpc",
      "http.request.method": "POST",
      "http.response.status_code": 200,
      "network.protocol.version": "2",
      "client.address": "127.0.0.1",
    });
    expect(span.attributes).not.toHaveProperty("http.route");
    const queries = childrenOf(span);
    expect(queries.length).toBeGreaterThan(0);
    expect(queries.every((query) => query.traceId === traceId)).toBe(true);
  });

  it("leaves out a call whose caller chose not to sample it (traceparent flags 00), queries included", async () => {
    const registry = await startTraced();
    const response = await fetch(`${registry.url}/v1/entries/${encodeURIComponent(did)}`, {
      headers: { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00" },
    });
    expect(response.status).toBe(200);
    const sampled = await fetch(`${registry.url}/v1/entries/${encodeURIComponent(did)}`);
    expect(sampled.status).toBe(200);
    await registry.close();

    // Only the second resolve, and only its own queries.
    const span = onlySpan((s) => s.name === RESOLVE);
    expect(receiver.spans.some((s) => s.traceId === "0af7651916cd43dd8448eb211c80319c")).toBe(false);
    const queries = receiver.spans.filter((s) => s.kind === CLIENT);
    expect(queries.length).toBeGreaterThan(0);
    expect(queries.every((query) => query.parentSpanId === span.spanId)).toBe(true);
  });

  it("with OTEL_TRACES_SAMPLER_ARG=0 traces no call of its own choosing, yet keeps a caller's sampled trace", async () => {
    const registry = await startTraced({ otelSampleRatio: 0 });
    const unsampled = await fetch(`${registry.url}/v1/entries/${encodeURIComponent(did)}`);
    expect(unsampled.status).toBe(200);
    const continued = await fetch(`${registry.url}/v1/entries/${encodeURIComponent(did)}`, {
      headers: { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" },
    });
    expect(continued.status).toBe(200);
    await registry.close();

    const servers = receiver.spans.filter((s) => s.kind === SERVER);
    expect(servers).toHaveLength(1);
    expect(servers[0]!.traceId).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
  });

  it("marks a call that failed on the server's side (a passed deadline) as an error, with its code", async () => {
    const registry = await startTraced();
    const response = await fetch(`${registry.url}/${RESOLVE}`, {
      method: "POST",
      headers: { "content-type": "application/json", "connect-timeout-ms": "0" },
      body: JSON.stringify({ did }),
    });
    expect(response.status).toBe(504);
    expect(((await response.json()) as { code: string }).code).toBe("deadline_exceeded");
    await registry.close();

    const span = onlySpan((s) => s.name === RESOLVE);
    expect(span.status.code).toBe(STATUS_ERROR);
    expect(span.attributes).toMatchObject({
      "rpc.system.name": "connectrpc",
      "rpc.status_code": "DEADLINE_EXCEEDED",
      "error.type": "DEADLINE_EXCEEDED",
      "http.response.status_code": 504,
      "registry.protocol": "connect",
    });
  });

  it("does not make a correct refusal an error: not_found keeps its code, without error status", async () => {
    const registry = await startTraced();
    const client = grpcClient(registry.url);
    try {
      await expect(resolveOverGrpc(client, "did:reg:main:skill:nobody-published-this@1.0.0", new grpc.Metadata())).rejects.toMatchObject({
        code: grpc.status.NOT_FOUND,
      });
    } finally {
      client.close();
    }
    await registry.close();

    const span = onlySpan((s) => s.name === RESOLVE);
    expect(span.attributes).toMatchObject({ "rpc.system.name": "grpc", "rpc.status_code": "NOT_FOUND" });
    expect(span.attributes).not.toHaveProperty("error.type");
    expect(span.status.code ?? 0).not.toBe(STATUS_ERROR);
  });

  it("traces a create's prepared statement, marks the query that failed with its SQLSTATE, and never exports a bound value", async () => {
    const registry = await startTraced();
    const entry = await publisher.entry("traced-create", "1.0.0");
    expect((await publish(registry.url, entry)).status).toBe(201);
    expect((await publish(registry.url, entry)).status).toBe(409);
    await registry.close();

    const creates = receiver.spans.filter((s) => s.name === CREATE);
    expect(creates.map((s) => s.attributes["rpc.status_code"])).toEqual(["OK", "ALREADY_EXISTS"]);
    const [created, refused] = creates as [ExportedSpan, ExportedSpan];
    const createQuery = (span: ExportedSpan) =>
      childrenOf(span).find((query) => String(query.attributes["db.query.text"]).includes("registry_create_entry"));
    expect(createQuery(created)?.status.code ?? 0).not.toBe(STATUS_ERROR);
    const failed = createQuery(refused);
    expect(failed?.status.code).toBe(STATUS_ERROR);
    expect(failed?.attributes).toMatchObject({ "db.response.status_code": "23505", "error.type": "23505" });
    expect(refused.status.code ?? 0).not.toBe(STATUS_ERROR);

    const exported = JSON.stringify(receiver.spans);
    for (const value of [entry.signature, entrySignature, entry.description, publisher.did]) expect(exported).not.toContain(value);
  });

  it("gives a streaming call that Connect's adapter serves (health Watch) its span too", async () => {
    const registry = await startTraced();
    const health = createClient(Health, createGrpcTransport({ baseUrl: registry.url }));
    const abort = new AbortController();
    for await (const response of health.watch({ service: "" }, { signal: abort.signal })) {
      expect(response.status).toBeGreaterThan(0);
      break;
    }
    abort.abort();
    await registry.close();

    const span = onlySpan((s) => s.name === "grpc.health.v1.Health/Watch");
    expect(span.kind).toBe(SERVER);
    expect(span.attributes).toMatchObject({
      "rpc.system.name": "grpc",
      "rpc.method": "grpc.health.v1.Health/Watch",
      "rpc.status_code": "CANCELLED",
    });
    expect(span.status.code ?? 0).not.toBe(STATUS_ERROR);
  });

  it("keeps answering when the collector is unreachable, logs that spans were lost, and still closes", async () => {
    const unreachable = await unusedPortUrl();
    const registry = await startTraced({ otlpTracesEndpoint: unreachable });
    const response = await fetch(`${registry.url}/v1/entries/${encodeURIComponent(did)}`);
    expect(response.status).toBe(200);
    await registry.close();
    expect(registry.lines).toContainEqual(expect.objectContaining({ level: "warn", msg: expect.stringMatching(/^trace export failed/) }));
  });
});

describe("without an OTLP endpoint", () => {
  it("exports nothing, even with OpenTelemetry's own variables pointing at a receiver", async () => {
    // The exporter would read these itself, were one made: none is, since the config says off.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url.replace(/\/v1\/traces$/, "");
    process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = receiver.url;
    try {
      const registry = await startTraced({ otlpTracesEndpoint: undefined });
      const response = await fetch(`${registry.url}/v1/entries/${encodeURIComponent(did)}`, {
        headers: { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" },
      });
      expect(response.status).toBe(200);
      const client = grpcClient(registry.url);
      try {
        await resolveOverGrpc(client, did, new grpc.Metadata());
      } finally {
        client.close();
      }
      await registry.close();
    } finally {
      delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
      delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
    }
    expect(receiver.requests).toEqual([]);
  });
});

interface TracedRegistry {
  readonly url: string;
  /** Every line the server logged, parsed. */
  readonly lines: Record<string, any>[];
  close(): Promise<void>;
}

/** A registry on the shared database, tracing to the receiver, with its log kept for the test. */
async function startTraced(overrides: Partial<RegistryConfig> = {}): Promise<TracedRegistry> {
  const lines: Record<string, any>[] = [];
  const logger = createLogger((line) => lines.push(JSON.parse(line)));
  // No entry cache: every resolve reaches the database, so each has query spans to look at.
  const config = loadConfig(
    {},
    {
      port: 0,
      host: "127.0.0.1",
      rateLimitRps: 0,
      writeRateLimitRps: 0,
      tokenRateLimitRps: 0,
      entryCacheSize: 0,
      otlpTracesEndpoint: receiver.url,
      otelServiceName: "registry-under-test",
      ...overrides,
    },
  );
  const running = await startRegistry({ ...config, authUrl: "http://registry.test" }, { logger, database: db.database });
  return { url: running.url, lines, close: () => running.close() };
}

function publish(url: string, entry: Record<string, unknown>): Promise<Response> {
  return fetch(`${url}/v1/entries`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(entry),
  });
}

function grpcClient(url: string): grpc.Client & Record<string, any> {
  const Client = grpcJsClientConstructor(RegistryService);
  return new Client(new URL(url).host, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>;
}

function resolveOverGrpc(client: Record<string, any>, entryDid: string, metadata: grpc.Metadata): Promise<any> {
  return new Promise((resolve, reject) => {
    client.ResolveEntry(
      fromJson(ResolveEntryRequestSchema, { did: entryDid }),
      metadata,
      (error: grpc.ServiceError | null, response: any) => {
        if (error !== null) reject(error);
        else resolve(toJson(ResolveEntryResponseSchema, response));
      },
    );
  });
}

/** The one exported span that `matches`. */
function onlySpan(matches: (span: ExportedSpan) => boolean): ExportedSpan {
  const found = receiver.spans.filter(matches);
  expect(found, `spans exported: ${receiver.spans.map((s) => s.name).join(", ")}`).toHaveLength(1);
  return found[0] as ExportedSpan;
}

function childrenOf(parent: ExportedSpan): ExportedSpan[] {
  return receiver.spans.filter((span) => span.parentSpanId === parent.spanId && span.traceId === parent.traceId);
}

/** An OTLP/HTTP receiver: takes OTLP/JSON export requests and keeps their spans. */
async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const requests: OtlpReceiver["requests"] = [];
  const spans: ExportedSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      requests.push({ path: req.url ?? "", contentType: req.headers["content-type"] });
      spans.push(...decodeExport(JSON.parse(Buffer.concat(chunks).toString("utf8"))));
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    });
  });
  await listen(server);
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    requests,
    spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The spans of an ExportTraceServiceRequest in OTLP's JSON encoding (ids in hex). */
function decodeExport(request: any): ExportedSpan[] {
  return (request.resourceSpans ?? []).flatMap((resourceSpans: any) => {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    return (resourceSpans.scopeSpans ?? []).flatMap((scopeSpans: any) =>
      (scopeSpans.spans ?? []).map(
        (span: any): ExportedSpan => ({
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? "",
          name: span.name,
          kind: span.kind,
          attributes: attributesOf(span.attributes),
          status: span.status ?? {},
          resource,
        }),
      ),
    );
  });
}

function attributesOf(list: { key: string; value: Record<string, unknown> }[] | undefined): Record<string, unknown> {
  const attributes: Record<string, unknown> = {};
  for (const { key, value } of list ?? []) {
    if ("stringValue" in value) attributes[key] = value.stringValue;
    else if ("intValue" in value) attributes[key] = Number(value.intValue);
    else if ("boolValue" in value) attributes[key] = value.boolValue;
    else if ("doubleValue" in value) attributes[key] = value.doubleValue;
    else attributes[key] = value;
  }
  return attributes;
}

function listen(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
}

/** The URL of a port nothing listens on (one a server held a moment ago). */
async function unusedPortUrl(): Promise<string> {
  const server = createServer();
  await listen(server);
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/v1/traces`;
}

describe("sampling configuration", () => {
  it("reads the parent-based samplers and refuses the others and bad ratios, naming the variable", () => {
    expect(loadConfig({}).otelSampleRatio).toBe(1);
    expect(loadConfig({ OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.25" }).otelSampleRatio).toBe(0.25);
    expect(loadConfig({ OTEL_TRACES_SAMPLER: "parentbased_always_off" }).otelSampleRatio).toBe(0);
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER: "always_on" })).toThrow(/OTEL_TRACES_SAMPLER/);
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "1.5" })).toThrow(
      /OTEL_TRACES_SAMPLER_ARG/,
    );
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "-1" })).toThrow(
      /OTEL_TRACES_SAMPLER_ARG/,
    );
  });
});

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRegistry } from "../../src/app.js";
import { loadConfig } from "../../src/config.js";
import { createLogger, type AccessRecord } from "../../src/logger.js";
import { startTracing } from "../../src/observability/tracing.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { startTestRegistry } from "../support/registry-fixture.js";

/**
 * W3C trace context from browsers: a cross-origin page may send traceparent, tracestate and
 * baggage, and the lines the registry logs for a traced call name the call's trace and span.
 */

const ORIGIN = "https://app.example";
const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN_ID = "b7ad6b7169203331";
const TRACEPARENT = `00-${TRACE_ID}-${CALLER_SPAN_ID}-01`;
const ABSENT_DID = "did:reg:main:skill:absent@1.0.0";
const HEX_SPAN_ID = /^[0-9a-f]{16}$/;

let db: TestDatabase;
let collector: Server;
let collectorUrl: string;

beforeAll(async () => {
  db = await createTestDatabase();
  // Takes the exporter's requests and drops them: these tests read the log, not the spans.
  collector = createServer((req, res) =>
    req.resume().on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}")),
  );
  await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
  collectorUrl = `http://127.0.0.1:${(collector.address() as AddressInfo).port}/v1/traces`;
});

afterAll(async () => {
  await new Promise((resolve) => collector?.close(resolve));
  await db?.drop();
});

/** A registry on the test database with its log lines kept, tracing to the collector unless `traced` is false. */
async function startLogged(traced: boolean) {
  const lines: Record<string, any>[] = [];
  const logger = createLogger((line) => lines.push(JSON.parse(line)));
  const config = loadConfig(
    {},
    {
      port: 0,
      host: "127.0.0.1",
      rateLimitRps: 0,
      writeRateLimitRps: 0,
      tokenRateLimitRps: 0,
      ...(traced ? { otlpTracesEndpoint: collectorUrl } : {}),
    },
  );
  const running = await startRegistry({ ...config, authUrl: "http://registry.test" }, { logger, database: db.database });
  return { url: running.url, lines, close: () => running.close() };
}

const accessLineOf = (lines: Record<string, any>[], response: Response) => {
  const requestId = response.headers.get("x-request-id");
  const found = lines.filter((line) => line.msg === "call" && line.requestId === requestId);
  expect(found, `access lines: ${JSON.stringify(lines.filter((line) => line.msg === "call"))}`).toHaveLength(1);
  return found[0]!;
};

describe("CORS for trace context", () => {
  it.each([
    ["a REST path", `/v1/entries/${ABSENT_DID}`, "GET", "traceparent,tracestate,baggage"],
    [
      "a Connect path",
      "/registry.v1.RegistryService/ResolveEntry",
      "POST",
      "content-type,connect-protocol-version,traceparent,tracestate,baggage",
    ],
    ["a gRPC-Web path", "/registry.v1.RegistryService/ResolveEntry", "POST", "content-type,x-grpc-web,traceparent,tracestate,baggage"],
  ])("lets a preflight for %s send traceparent, tracestate and baggage", async (_, path, method, requested) => {
    const registry = await startTestRegistry(db.database, { corsOrigins: [ORIGIN] });
    try {
      const response = await fetch(registry.url + path, {
        method: "OPTIONS",
        headers: { origin: ORIGIN, "access-control-request-method": method, "access-control-request-headers": requested },
      });
      expect(response.status).toBe(204);
      expect(response.headers.get("access-control-allow-origin")).toBe(ORIGIN);
      const allowed = (response.headers.get("access-control-allow-headers") ?? "").toLowerCase().split(/,\s*/);
      expect(allowed).toEqual(expect.arrayContaining(requested.split(",")));
    } finally {
      await registry.close();
    }
  });
});

describe("trace ids in log lines", () => {
  it("puts the caller's trace id and the call's own span id on a REST call's access line", async () => {
    const registry = await startLogged(true);
    try {
      const response = await fetch(`${registry.url}/v1/entries/${ABSENT_DID}`, { headers: { traceparent: TRACEPARENT, origin: ORIGIN } });
      expect(response.status).toBe(404);
      const line = accessLineOf(registry.lines, response);
      expect(line).toMatchObject({ trace_id: TRACE_ID, trace_flags: "01", route: "GET /v1/entries/{did}" });
      expect(line.span_id).toMatch(HEX_SPAN_ID);
      // The server span's own id, a child of the caller's.
      expect(line.span_id).not.toBe(CALLER_SPAN_ID);
    } finally {
      await registry.close();
    }
  });

  it("does the same for a Connect call, and starts a trace of its own for a call that brings none", async () => {
    const registry = await startLogged(true);
    try {
      const call = (headers: Record<string, string>) =>
        fetch(`${registry.url}/registry.v1.RegistryService/ResolveEntry`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify({ did: ABSENT_DID }),
        });
      const continued = await call({ traceparent: TRACEPARENT });
      expect(continued.status).toBe(404);
      expect(accessLineOf(registry.lines, continued)).toMatchObject({ protocol: "connect", trace_id: TRACE_ID, code: "not_found" });
      const fresh = await call({});
      const own = accessLineOf(registry.lines, fresh);
      expect(own.trace_id).toMatch(/^[0-9a-f]{32}$/);
      expect(own.trace_id).not.toBe(TRACE_ID);
      expect(own.span_id).toMatch(HEX_SPAN_ID);
    } finally {
      await registry.close();
    }
  });

  it("writes no trace fields with tracing off, traceparent or not", async () => {
    const registry = await startLogged(false);
    try {
      const response = await fetch(`${registry.url}/v1/entries/${ABSENT_DID}`, { headers: { traceparent: TRACEPARENT } });
      const line = accessLineOf(registry.lines, response);
      expect(line).not.toHaveProperty("trace_id");
      expect(line).not.toHaveProperty("span_id");
    } finally {
      await registry.close();
    }
  });

  it("names the call's trace and span on any line logged inside the call, and none outside", async () => {
    const lines: Record<string, any>[] = [];
    const tracing = startTracing({ endpoint: collectorUrl, serviceName: "trace-context-test", sampleRatio: 1, onExportError: () => {} });
    try {
      const logger = createLogger((line) => lines.push(JSON.parse(line))).withTrace(tracing.currentTrace);
      const span = tracing.serverSpans.start({ method: "GET", httpVersion: 1, headers: { traceparent: TRACEPARENT } }, "127.0.0.1");
      await span.run(async () => {
        await new Promise((resolve) => setImmediate(resolve));
        logger.warn("inside", { detail: 1 });
      });
      logger.info("outside");
      span.end({ protocol: "http", method: undefined, route: undefined, requestId: "r" }, "ok", 200);
      const [inside, outside] = lines;
      expect(inside).toMatchObject({ msg: "inside", detail: 1, trace_id: TRACE_ID, span_id: span.trace.span_id, trace_flags: "01" });
      expect(span.trace.span_id).toMatch(HEX_SPAN_ID);
      expect(outside).not.toHaveProperty("trace_id");
    } finally {
      await tracing.close();
    }
  });

  it("writes an access line with trace fields byte for byte as pino writes the same record", () => {
    const lines: string[] = [];
    const reference: string[] = [];
    const logger = createLogger((line) => lines.push(line));
    const referenceLogger = pino(
      {
        timestamp: () => (lines.length === 0 ? "" : `,"time":"${JSON.parse(lines.at(-1)!).time}"`),
        formatters: { level: (label) => ({ level: label }) },
      },
      { write: (line: string) => void reference.push(line) },
    );
    const record: AccessRecord = {
      requestId: "r",
      protocol: "grpc",
      code: "ok",
      status: 200,
      ms: 1,
      client: "::1",
      principal: "did:key:z6Mk",
      trace_id: TRACE_ID,
      span_id: CALLER_SPAN_ID,
      trace_flags: "01",
    };
    logger.access(record);
    referenceLogger.info(record, "call");
    expect(lines[0]).toBe(reference[0]);
  });
});

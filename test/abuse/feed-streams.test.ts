import http from "node:http";
import http2 from "node:http2";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { ChangeFeedService } from "../../gen/registry/v1/change_feed_service_pb.js";
import type { RegistryConfig } from "../../src/config.js";
import { sample } from "../support/metric-samples.js";
import { startPublishingRegistry, type PublishingSetup } from "../support/registry-fixture.js";
import { changeLogSize, publishOverRest } from "../support/rest-publishing.js";

/**
 * The change feed's streams as an attacker opens them: more than an address may hold, clients
 * that never read (an HTTP/2 window of zero), pages of the largest entries, many streams at the
 * head while writes commit, and bad resume points. Each case was a way to take the server down or
 * to get a wrong status; each is answered now with a bound, or the status that names the fault.
 */

const STALL_MS = 300;
/** Entries are published with this much data: a page of two weighs more than the page bound. */
const LARGE_DATA_BYTES = 30_000;
const PAGE_MAX_BYTES = 48 * 1024;

const BASE: Partial<RegistryConfig> = {
  maxStreamsPerIp: 2,
  maxStreams: 4,
  streamStallTimeoutMs: STALL_MS,
  changePageMaxBytes: PAGE_MAX_BYTES,
  trustProxy: ["loopback"],
};

let setup: PublishingSetup;
let url: string;

beforeAll(async () => {
  setup = await startPublishingRegistry(["registry.publish.skill"], BASE);
  url = setup.registry.url;
  for (let version = 1; version <= 4; version += 1) await publish("large", `${version}.0.0`, LARGE_DATA_BYTES);
});
afterAll(async () => {
  await setup?.close();
});
// Every case starts with no stream open: the server hears of a closed one a moment after.
beforeEach(async () => {
  await expect.poll(openStreams).toBe(0);
});

async function openStreams(): Promise<number> {
  const text = await (await fetch(setup.registry.running.metricsUrl)).text();
  return sample(text, "registry_change_streams_open");
}

function publish(name: string, version: string, dataBytes = 0): Promise<void> {
  return publishOverRest(setup, name, version, dataBytes === 0 ? {} : { data: { blob: "x".repeat(dataBytes) } });
}

const logSize = () => changeLogSize(url);

/** An SSE stream held open over HTTP/1.1, from `forwardedFor` (through the trusted loopback proxy). */
interface SseStream {
  readonly status: number;
  readonly body: string;
  /** Resolves with the event ids seen once `count` events arrived. */
  events(count: number): Promise<string[]>;
  close(): void;
}

function openSse(path: string, forwardedFor?: string, headers: Record<string, string> = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const request = http.get(
      `${url}${path}`,
      { headers: { ...headers, ...(forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor }) } },
      (response) => {
        let body = "";
        const waiters: Array<() => void> = [];
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          body += chunk;
          for (const waiter of waiters.splice(0)) waiter();
        });
        response.on("error", () => {});
        const ids = () => [...body.matchAll(/^id: (\d+)$/gm)].map((match) => match[1]!);
        const stream: SseStream = {
          status: response.statusCode!,
          get body() {
            return body;
          },
          events: (count) =>
            new Promise((done) => {
              const check = () => (ids().length >= count ? done(ids()) : waiters.push(check));
              check();
            }),
          close: () => request.destroy(),
        };
        if (response.statusCode === 200) resolve(stream);
        else response.on("end", () => resolve(stream));
      },
    );
    request.on("error", reject);
  });
}

/**
 * Whether a statement reads a page of the log's records, as a stream's batch does: the page query
 * reads the log's size beside its records. Not the integrator's reads of new records, nor size reads.
 */
function readsRecords(sql: string): boolean {
  return /from "registry_log"/.test(sql) && /"entry_state"/.test(sql) && /as last_index/.test(sql);
}

function transports(): Record<string, Transport> {
  return {
    connect: createConnectTransport({ baseUrl: url, httpVersion: "1.1" }),
    grpc: createGrpcTransport({ baseUrl: url }),
    "grpc-web": createGrpcWebTransport({ baseUrl: url, httpVersion: "1.1" }),
  };
}

/** The code a stream ends with, having read its first `take` messages (0: it must fail at once). */
async function streamOutcome(transport: Transport, after: bigint | undefined, take: number): Promise<Code | "taken"> {
  const client = createClient(ChangeFeedService, transport);
  // Leaving the loop alone would not end the request: the abort closes it.
  const abort = new AbortController();
  let taken = 0;
  try {
    for await (const _ of client.watchChanges({ after }, { signal: abort.signal })) {
      taken += 1;
      if (taken >= take) return "taken";
    }
    return Code.Unknown;
  } catch (error) {
    return ConnectError.from(error).code;
  } finally {
    abort.abort();
  }
}

describe("open streams are capped per address and in all", () => {
  it("refuses a third SSE stream from one address with 429, and takes one again once a stream closes", async () => {
    const first = await openSse("/v1/changes/stream", "2001:db8:1::1");
    const second = await openSse("/v1/changes/stream", "2001:db8:1::2");
    // Another address of the same /64: the same client.
    const third = await openSse("/v1/changes/stream", "2001:db8:1::3");
    expect([first.status, second.status, third.status]).toEqual([200, 200, 429]);
    expect(JSON.parse(third.body)).toMatchObject({
      code: "resource_exhausted",
      message: expect.stringContaining("from this client address (at most 2)"),
    });

    first.close();
    // The server hears of the close when the socket ends: give it a moment.
    await expect
      .poll(async () => {
        const again = await openSse("/v1/changes/stream", "2001:db8:1::4");
        again.close();
        return again.status;
      })
      .toBe(200);
    second.close();
  });

  it("counts WatchChanges on every protocol against the same caps as SSE", async () => {
    const held = [await openSse("/v1/changes/stream"), await openSse("/v1/changes/stream")];
    expect(held.map((stream) => stream.status)).toEqual([200, 200]);
    for (const [name, transport] of Object.entries(transports())) {
      expect(await streamOutcome(transport, undefined, 1), name).toBe(Code.ResourceExhausted);
    }
    for (const stream of held) stream.close();
    await expect.poll(() => streamOutcome(transports().connect!, undefined, 1)).toBe("taken");
  });

  it("refuses streams past the total cap whatever their addresses", async () => {
    const held = await Promise.all(
      ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"].map((address) => openSse("/v1/changes/stream", address)),
    );
    expect(held.map((stream) => stream.status)).toEqual([200, 200, 200, 200]);
    const over = await openSse("/v1/changes/stream", "10.0.0.5");
    expect(over.status).toBe(429);
    expect(over.body).toContain("on this server (at most 4)");
    for (const stream of held) stream.close();
  });
});

describe("a client that does not read", () => {
  /** An HTTP/2 session that never opens its window: the server can send it nothing. */
  function zeroWindowSession(): http2.ClientHttp2Session {
    return http2.connect(url, { settings: { initialWindowSize: 0 } });
  }

  /** How the stream ended: the RST_STREAM code the server sent, and after how long. */
  function ending(stream: http2.ClientHttp2Stream): Promise<{ rstCode: number; ms: number }> {
    const start = Date.now();
    stream.on("error", () => {});
    return new Promise((resolve) => stream.on("close", () => resolve({ rstCode: stream.rstCode ?? -1, ms: Date.now() - start })));
  }

  it("has its SSE stream reset once an event waits for it past the stall timeout, and its place freed", async () => {
    const session = zeroWindowSession();
    try {
      const streams = [0, 1].map(() => session.request({ ":path": "/v1/changes/stream", "x-forwarded-for": "2001:db8:2::1" }));
      const ends = await Promise.all(streams.map(ending));
      for (const end of ends) {
        expect(end.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
        // The log holds 120 KB of entries: far past any buffer, so the stall is certain.
        expect(end.ms).toBeLessThan(10_000);
      }
      const again = await openSse("/v1/changes/stream", "2001:db8:2::1");
      expect(again.status).toBe(200);
      again.close();
    } finally {
      session.close();
    }
  });

  it("has its WatchChanges stream reset the same way", async () => {
    const session = zeroWindowSession();
    try {
      const body = Buffer.from([0, 0, 0, 0, 0]);
      const streams = [0, 1].map(() => {
        const stream = session.request({
          ":method": "POST",
          ":path": "/registry.v1.ChangeFeedService/WatchChanges",
          "content-type": "application/grpc",
          te: "trailers",
          "x-forwarded-for": "2001:db8:3::1",
        });
        stream.end(body);
        return stream;
      });
      const ends = await Promise.all(streams.map(ending));
      for (const end of ends) expect(end.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
      expect(await streamOutcome(transports().grpc!, undefined, 1)).toBe("taken");
    } finally {
      session.close();
    }
  });
});

describe("pages are bounded in bytes as well as records", () => {
  it("stops a page before the record that would take it past CHANGE_PAGE_MAX_BYTES, and always gives the first", async () => {
    const response = await fetch(`${url}/v1/changes?limit=1000`);
    const page = (await response.json()) as { changes: Array<{ index: string }>; size: string };
    expect(response.status).toBe(200);
    // Four records of about 30 KB: the first two start within 48 KiB, the third would not.
    expect(page.changes.map((change) => change.index)).toEqual(["0", "1"]);
    expect(Number(page.size)).toBeGreaterThanOrEqual(4);
    const next = (await (await fetch(`${url}/v1/changes?after=1&limit=1000`)).json()) as { changes: Array<{ index: string }> };
    expect(next.changes.map((change) => change.index).slice(0, 2)).toEqual(["2", "3"]);
  });

  it("delivers every record over a stream whose batches are so bounded", async () => {
    const size = await logSize();
    const stream = await openSse("/v1/changes/stream");
    const ids = await stream.events(size);
    stream.close();
    expect(ids).toEqual(Array.from({ length: size }, (_, index) => String(index)));
  });
});

describe("streams at the head of the log", () => {
  it("cost one read of the log per commit, however many are open", async () => {
    const reads: string[] = [];
    const onQuery = (query: { sql: string }) => {
      if (readsRecords(query.sql)) reads.push(query.sql);
    };
    const knex = setup.db.database.knex;
    const streams: SseStream[] = [];
    const addresses = ["10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4"];
    try {
      const size = await logSize();
      for (const address of addresses) streams.push(await openSse(`/v1/changes/stream?after=${size - 1}`, address));
      // Once every stream has had a first live record, all follow the head: from here, what they
      // read is the commits'.
      await publish("head", "1.0.0");
      for (const stream of streams) await stream.events(1);
      knex.on("query", onQuery);
      await publish("head", "2.0.0");
      await publish("head", "3.0.0");
      for (const stream of streams) expect(await stream.events(3)).toEqual([String(size), String(size + 1), String(size + 2)]);
      // One read per commit, or one for both when the second commits before the first read.
      expect(reads.length, reads.join("\n")).toBeLessThanOrEqual(2);
    } finally {
      knex.removeListener("query", onQuery);
      for (const stream of streams) stream.close();
    }
  });
});

describe("streams at the head of the log, after it grew with nobody following", () => {
  it("read from the head, not the records written meanwhile", async () => {
    // Three pages' worth of records that no stream follows: what the shared tail holds goes stale.
    for (let version = 1; version <= 6; version += 1) await publish("unfollowed", `${version}.0.0`, LARGE_DATA_BYTES);
    const reads: string[] = [];
    const onQuery = (query: { sql: string }) => {
      if (readsRecords(query.sql)) reads.push(query.sql);
    };
    const knex = setup.db.database.knex;
    const size = await logSize();
    const stream = await openSse(`/v1/changes/stream?after=${size - 1}`);
    try {
      knex.on("query", onQuery);
      await publish("after-unfollowed", "1.0.0");
      expect(await stream.events(1)).toEqual([String(size)]);
      expect(reads.length, reads.join("\n")).toBeLessThanOrEqual(1);
    } finally {
      knex.removeListener("query", onQuery);
      stream.close();
    }
  });
});

describe("bad resume points and failures inside streams", () => {
  it("answers a negative after on WatchChanges with invalid_argument on every protocol", async () => {
    for (const [name, transport] of Object.entries(transports())) {
      const client = createClient(ChangeFeedService, transport);
      const error = await (async () => {
        try {
          for await (const _ of client.watchChanges({ after: -1n })) return undefined;
        } catch (error) {
          return ConnectError.from(error);
        }
      })();
      expect(error?.code, name).toBe(Code.InvalidArgument);
      expect(error?.rawMessage, name).toContain("after");
    }
  });

  it("answers an SSE after or Last-Event-ID above int64 with 400 naming it", async () => {
    const tooLarge = "9223372036854775808";
    const byQuery = await openSse(`/v1/changes/stream?after=${tooLarge}`);
    expect(byQuery.status).toBe(400);
    expect(byQuery.body).toContain("after");
    const byHeader = await openSse("/v1/changes/stream", undefined, { "last-event-id": tooLarge });
    expect(byHeader.status).toBe(400);
    expect(byHeader.body).toContain("Last-Event-ID");
    const largest = await openSse("/v1/changes/stream?after=9223372036854775807");
    expect(largest.status).toBe(200);
    largest.close();
  });

  it("ends a stream whose read the database fails with unavailable, not internal", async () => {
    const knex = setup.db.database.knex;
    await knex.raw("alter table registry_log rename to registry_log_away");
    try {
      for (const [name, transport] of Object.entries(transports())) {
        expect(await streamOutcome(transport, undefined, 1), name).toBe(Code.Unavailable);
      }
    } finally {
      await knex.raw("alter table registry_log_away rename to registry_log");
    }
  });
});

describe("stream opens count against the read limit", () => {
  it("answers the opening past the budget with 429 on SSE and resource_exhausted on WatchChanges", async () => {
    const limited = await startPublishingRegistry(["registry.publish.skill"], { ...BASE, rateLimitRps: 0.01, rateLimitBurst: 2 });
    try {
      const open = (address: string) =>
        new Promise<http.IncomingMessage>((resolve, reject) => {
          const request = http.get(`${limited.registry.url}/v1/changes/stream`, { headers: { "x-forwarded-for": address } }, (response) => {
            resolve(response);
            request.destroy();
          });
          request.on("error", reject);
        });
      const answers = [await open("10.2.0.1"), await open("10.2.0.1"), await open("10.2.0.1")];
      expect(answers.map((answer) => answer.statusCode)).toEqual([200, 200, 429]);
      expect(answers[0]!.headers["ratelimit-policy"]).toBe('"reads";q=2;w=200');
      expect(answers[2]!.headers["retry-after"]).toBeDefined();

      // The address's budget is spent: a WatchChanges from it is refused too.
      const transport = createConnectTransport({
        baseUrl: limited.registry.url,
        httpVersion: "1.1",
        interceptors: [
          (next) => (request) => {
            request.header.set("x-forwarded-for", "10.2.0.1");
            return next(request);
          },
        ],
      });
      expect(await streamOutcome(transport, undefined, 1)).toBe(Code.ResourceExhausted);
    } finally {
      await limited.close();
    }
  });
});

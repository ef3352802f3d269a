import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient, type Transport as ConnectTransport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { ChangeFeedService } from "../../gen/registry/v1/change_feed_service_pb.js";
import { TransparencyLogService } from "../../gen/registry/v1/transparency_log_service_pb.js";
import { startPublishingRegistry, type PublishingSetup } from "../support/registry-fixture.js";

/**
 * The change feed and the transparency log are reads like any other: a client that has spent its
 * read budget is refused (429, resource_exhausted) on change pages, WatchChanges streams, the
 * log's RPCs and its tlog-tiles paths alike, on every protocol, with the RateLimit headers.
 * Each case speaks as its own client (TRUST_PROXY and X-Forwarded-For from loopback), so each
 * starts with a full bucket of its own.
 */

const BURST = 3;
/** The bucket refills in half an hour: nothing comes back while a case runs, however slow the machine. */
const WINDOW_SECONDS = 1_800;
const RATE = BURST / WINDOW_SECONDS;
const ENTRY = "did:reg:main:skill:read-limits@1.0.0";

let setup: PublishingSetup;
let url: string;
let clients = 0;
/** A client address no case has used yet. */
const freshClient = () => `198.51.100.${++clients}`;
const from = (client: string) => ({ "x-forwarded-for": client });

beforeAll(async () => {
  setup = await startPublishingRegistry(["registry.publish.skill"], {
    rateLimitRps: RATE,
    rateLimitBurst: BURST,
    trustProxy: ["loopback"],
    logIntegrateMs: 20,
  });
  url = setup.registry.url;
  const entry = await setup.publisher.entry("read-limits", "1.0.0");
  const created = await fetch(`${url}/v1/entries`, {
    method: "POST",
    headers: { authorization: `Bearer ${setup.token}`, "content-type": "application/json" },
    body: JSON.stringify(entry),
  });
  expect(created.status, await created.text()).toBe(201);
  // Tiles and entry proofs answer once the change is in a checkpoint.
  for (;;) {
    const checkpoint = await (await fetch(`${url}/checkpoint`, { headers: from(freshClient()) })).text();
    if (checkpoint.split("\n")[1] === "1") break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
});

afterAll(async () => {
  await setup?.close();
});

/** An HTTP read: spends the bucket, then the next answer is a 429 that says so. */
async function expectHttpLimited(path: string, okStatus = 200): Promise<void> {
  const client = freshClient();
  for (let i = 0; i < BURST; i++) {
    const allowed = await fetch(url + path, { headers: from(client) });
    expect(allowed.status, `${path} #${i + 1}: ${await allowed.text()}`).toBe(okStatus);
    expect(allowed.headers.get("ratelimit")).toMatch(new RegExp(`^"reads";r=${BURST - 1 - i};t=\\d+$`));
  }
  const refused = await fetch(url + path, { headers: from(client) });
  expect(refused.status, path).toBe(429);
  expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  expect(refused.headers.get("ratelimit-policy")).toBe(`"reads";q=${BURST};w=${WINDOW_SECONDS}`);
  const body = (await refused.json()) as { code: string; message: string };
  expect(body.code).toBe("resource_exhausted");
  expect(body.message).toContain("rate limit exceeded");
}

/** An RPC: BURST calls pass, the next is resource_exhausted. */
async function expectRpcLimited(call: (headers: Record<string, string>) => Promise<unknown>): Promise<void> {
  const headers = from(freshClient());
  for (let i = 0; i < BURST; i++) await call(headers);
  const error = await call(headers).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ConnectError);
  expect((error as ConnectError).code).toBe(Code.ResourceExhausted);
}

describe("change pages", () => {
  it("GET /v1/changes", () => expectHttpLimited("/v1/changes?limit=1000"));

  it("ListChanges over Connect and gRPC", async () => {
    for (const transport of transports()) {
      const feed = createClient(ChangeFeedService, transport);
      await expectRpcLimited((headers) => feed.listChanges({ limit: 1000 }, { headers }));
    }
  });
});

describe("WatchChanges streams", () => {
  it("each stream opened draws a read, over Connect and gRPC", async () => {
    for (const transport of transports()) {
      const feed = createClient(ChangeFeedService, transport);
      // An allowed stream replays the log's one change at once; a refused one fails before any.
      await expectRpcLimited(async (headers) => {
        const abort = new AbortController();
        try {
          for await (const message of feed.watchChanges({}, { headers, signal: abort.signal })) {
            expect(message.change?.index).toBe(0n);
            return;
          }
        } finally {
          abort.abort();
        }
      });
    }
  });
});

describe("the transparency log", () => {
  it("its RPCs, over REST", async () => {
    await expectHttpLimited("/v1/log/checkpoint");
    await expectHttpLimited("/v1/log/key");
    await expectHttpLimited("/v1/log/proofs/inclusion?index=0&treeSize=1");
    await expectHttpLimited("/v1/log/proofs/consistency?fromSize=1&toSize=1");
    await expectHttpLimited(`/v1/log/entries/${encodeURIComponent(ENTRY)}`);
  });

  it("its RPCs, over Connect and gRPC", async () => {
    for (const transport of transports()) {
      const log = createClient(TransparencyLogService, transport);
      await expectRpcLimited((headers) => log.getCheckpoint({}, { headers }));
      await expectRpcLimited((headers) => log.getEntryProof({ did: ENTRY }, { headers }));
    }
  });

  it("GET /checkpoint, hash tiles and entry bundles", async () => {
    await expectHttpLimited("/checkpoint");
    await expectHttpLimited("/tile/0/000.p/1");
    await expectHttpLimited("/tile/entries/000.p/1");
  });

  it("a tile beyond the tree draws a read too", async () => {
    await expectHttpLimited("/tile/0/999", 404);
  });
});

describe("buckets", () => {
  it("the feed, the log and entry reads share one budget per client", async () => {
    const headers = from(freshClient());
    const answers = [
      await fetch(`${url}/v1/changes`, { headers }),
      await fetch(`${url}/checkpoint`, { headers }),
      await fetch(`${url}/v1/entries/${encodeURIComponent(ENTRY)}`, { headers }),
      await fetch(`${url}/tile/entries/000.p/1`, { headers }),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 429]);
  });
});

function transports(): ConnectTransport[] {
  return [createConnectTransport({ baseUrl: url, httpVersion: "1.1" }), createGrpcTransport({ baseUrl: url })];
}

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, toBinary, toJsonString } from "@bufbuild/protobuf";
import { createContextValues, type HandlerContext } from "@connectrpc/connect";
import { createReadAnswers, type KeptRead } from "../../src/edge/read-answers.js";
import { responseBinaryBytes, responseJsonBytes } from "../../src/edge/rpc/reused-encodings.js";
import { servedService, type ServedService } from "../../src/edge/served-services.js";
import type { ChangeFeed, ChangeListener } from "../../src/storage/entry-cache.js";
import { startPublishingRegistry, type PublishingSetup, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { PROTOCOLS, registryClient } from "../support/protocol-clients.js";
import { changesHeard, sample, untilChangesHeard } from "../support/metric-samples.js";
import { RegistryService, ResolveEntryResponseSchema, type ResolveEntryResponse } from "../../gen/registry/v1/registry_service_pb.js";

/**
 * Kept answers (src/edge/read-answers.ts): the decorator on its own, over a handler the test
 * writes and a feed it drives by hand, then through a running registry on every protocol, where a
 * write must show on the very next read of the same request and interceptors (rate limits) must
 * still run for every call.
 */

/** A feed the test drives by hand. */
function manualFeed(): ChangeFeed & { change(tag: string): void; reset(): void; live: boolean } {
  let listener: ChangeListener | undefined;
  return {
    live: true,
    subscribe: (l) => void (listener = l),
    change: (tag) => listener?.onChange(tag),
    reset: () => listener?.onReset(),
  };
}

/** Resolves "tag:version" to that version, tagged by what precedes the colon; counts its runs and can be held open. */
function resolver() {
  let runs = 0;
  let gate: Promise<void> = Promise.resolve();
  const served = servedService(RegistryService, {
    async resolveEntry(request, context) {
      runs++;
      await gate;
      context.responseHeader.set("cache-control", "no-cache");
      return { entry: { version: request.did.split(":")[1], description: "x".repeat(100), tags: ["a"] } };
    },
  });
  return {
    served,
    runs: () => runs,
    hold(): () => void {
      let open!: () => void;
      gate = new Promise((resolve) => (open = resolve));
      return () => open();
    },
  };
}

const READS: readonly KeptRead[] = [
  { method: RegistryService.method.resolveEntry, tagOf: (request: { did: string }) => request.did.split(":")[0] },
];

const contextOf = () => ({ responseHeader: new Headers(), values: createContextValues() }) as unknown as HandlerContext;

async function resolve(served: ServedService, did: string, context = contextOf()): Promise<ResolveEntryResponse> {
  const impl = served.impl.resolveEntry as (request: unknown, context: HandlerContext) => Promise<ResolveEntryResponse>;
  return create(ResolveEntryResponseSchema, await impl({ did }, context));
}

const versionOf = async (served: ServedService, did: string) => (await resolve(served, did)).entry?.version;

describe("kept answers, on their own", () => {
  it("answer the same request until its tag changes, with the headers the handler set; other tags keep theirs", async () => {
    const feed = manualFeed();
    const handler = resolver();
    const served = createReadAnswers({ changes: feed }).decorate(handler.served, READS);
    await resolve(served, "a:1.0.0");
    await resolve(served, "b:2.0.0");
    const context = contextOf();
    expect((await resolve(served, "a:1.0.0", context)).entry?.version).toBe("1.0.0");
    expect(context.responseHeader.get("cache-control")).toBe("no-cache");
    expect(handler.runs()).toBe(2);
    feed.change("a");
    expect(await versionOf(served, "a:1.0.0")).toBe("1.0.0");
    expect(handler.runs()).toBe(3);
    expect(await versionOf(served, "b:2.0.0")).toBe("2.0.0");
    expect(handler.runs()).toBe(3);
  });

  it("share a frozen message whose encodings are protobuf-es's; changing it throws", async () => {
    const served = createReadAnswers({ changes: manualFeed() }).decorate(resolver().served, READS);
    await resolve(served, "a:1.0.0");
    const kept = await resolve(served, "a:1.0.0");
    expect(await resolve(served, "a:1.0.0")).toBe(kept);
    const entry = kept.entry as NonNullable<ResolveEntryResponse["entry"]>;
    expect(() => void (entry.version = "9.9.9")).toThrow(TypeError);
    expect(() => void entry.tags.push("b")).toThrow(TypeError);
    expect(() => void (kept.entry = undefined)).toThrow(TypeError);
    const plain = create(ResolveEntryResponseSchema, { entry: { ...entry, tags: [...entry.tags] } });
    expect(Buffer.from(toBinary(ResolveEntryResponseSchema, plain))).toEqual(responseBinaryBytes(ResolveEntryResponseSchema, kept));
    expect(responseJsonBytes(ResolveEntryResponseSchema, kept).toString()).toBe(
      toJsonString(ResolveEntryResponseSchema, plain, { alwaysEmitImplicit: true }),
    );
    expect(responseBinaryBytes(ResolveEntryResponseSchema, kept)).toBe(responseBinaryBytes(ResolveEntryResponseSchema, kept));
  });

  it("do not keep an answer whose handler ran while any change arrived (the race with a write)", async () => {
    const feed = manualFeed();
    const handler = resolver();
    const served = createReadAnswers({ changes: feed }).decorate(handler.served, READS);
    const open = handler.hold();
    const reading = resolve(served, "a:1.0.0");
    // A write commits and is heard of while the handler is still reading; which tag it names is
    // not known before the handler ran, so any change counts.
    feed.change("unrelated");
    open();
    await reading;
    await resolve(served, "a:1.0.0");
    expect(handler.runs()).toBe(2);
    await resolve(served, "a:1.0.0");
    expect(handler.runs()).toBe(2);
  });

  it("keep nothing, and answer nothing kept, while the feed is down; a reset forgets every answer", async () => {
    const feed = manualFeed();
    const handler = resolver();
    const answers = createReadAnswers({ changes: feed });
    const served = answers.decorate(handler.served, READS);
    await resolve(served, "a:1.0.0");
    feed.live = false;
    await resolve(served, "a:1.0.0");
    await resolve(served, "a:1.0.0");
    expect(handler.runs()).toBe(3);
    feed.live = true;
    await resolve(served, "a:1.0.0");
    await resolve(served, "b:1.0.0");
    expect(answers.size).toBe(2);
    feed.reset();
    expect(answers.size).toBe(0);
    await resolve(served, "a:1.0.0");
    expect(handler.runs()).toBe(6);
  });

  it("expire after the TTL, and stay within their count and byte bounds, least recently used first", async () => {
    let clock = 0;
    const handler = resolver();
    const answers = createReadAnswers({ changes: manualFeed(), ttlMs: 1000, maxRequests: 2, now: () => clock });
    const served = answers.decorate(handler.served, READS);
    await resolve(served, "a:1.0.0");
    clock = 1001;
    await resolve(served, "a:1.0.0");
    expect(handler.runs()).toBe(2);
    await resolve(served, "b:1.0.0");
    await resolve(served, "a:1.0.0");
    await resolve(served, "c:1.0.0");
    expect(answers.size).toBe(2);
    const runs = handler.runs();
    await resolve(served, "a:1.0.0");
    expect(handler.runs()).toBe(runs);
    await resolve(served, "b:1.0.0");
    expect(handler.runs()).toBe(runs + 1);

    const feed = manualFeed();
    const small = createReadAnswers({ changes: feed, maxBytes: 4_000 });
    const smallServed = small.decorate(resolver().served, READS);
    for (const tag of ["a", "b", "c", "d", "e", "f"]) await resolve(smallServed, `${tag}:1.0.0`);
    expect(small.bytes).toBeLessThanOrEqual(4_000);
    expect(small.size).toBeLessThan(6);
    expect(small.size).toBeGreaterThan(0);
    // A changed tag gives its bytes back.
    const withAnswers = small.bytes;
    feed.change("f");
    expect(small.bytes).toBeLessThan(withAnswers);
  });

  it("refuse, when the server starts, a method whose answers cannot be kept", () => {
    const answers = createReadAnswers({ changes: manualFeed() });
    const createEntry: KeptRead = { method: RegistryService.method.createEntry, tagOf: () => "a" };
    expect(() => answers.decorate(servedService(RegistryService, { createEntry: async () => ({}) }), [createEntry])).toThrow(
      /NO_SIDE_EFFECTS/,
    );
  });
});

describe("kept answers in a running registry", () => {
  let setup: PublishingSetup;
  let registry: TestRegistry;
  let publisher: TestPublisher;
  let token: string;

  beforeAll(async () => {
    setup = await startPublishingRegistry(["registry.publish.skill"]);
    ({ registry, publisher, token } = setup);
  });
  afterAll(() => setup?.close());

  const metricsUrl = () => `${registry.url}/metrics`;
  const hits = async () => sample(await (await fetch(metricsUrl())).text(), 'registry_answer_cache_reads_total{result="hit"}');

  describe.each(PROTOCOLS)("over %s", (protocol) => {
    it("serve repeated reads from memory, and show a publish or a revocation on the very next read", async () => {
      const client = registryClient(protocol, registry.url);
      try {
        const name = `kept-${protocol}`;
        const base = `did:reg:main:skill:${name}`;
        const heard = await changesHeard(metricsUrl());
        expect((await client.create(await publisher.entry(name, "1.0.0"), token)).code).toBe("ok");
        // On Postgres the write echoes back through the change feed, and drops whatever was kept
        // meanwhile: hits are counted once it has.
        await untilChangesHeard(metricsUrl(), heard + 1);
        const first = await client.resolve(`${base}@1.0.0`);
        await client.resolve(base);
        await client.versions(base);
        const before = await hits();
        const again = await client.resolve(`${base}@1.0.0`);
        expect(again.body).toEqual(first.body);
        expect((await client.resolve(base)).body.version).toBe("1.0.0");
        expect((await client.versions(base)).body.versions).toHaveLength(1);
        expect(await hits()).toBe(before + 3);

        // No waiting: the write went through this process, which hears of it before answering.
        expect((await client.create(await publisher.entry(name, "1.1.0"), token)).code).toBe("ok");
        expect((await client.resolve(base)).body.version).toBe("1.1.0");
        expect((await client.versions(base)).body.versions).toHaveLength(2);
        const did = `${base}@1.0.0`;
        expect((await client.revoke(did, await publisher.revocation(did, "superseded"), token)).code).toBe("ok");
        const revoked = await client.resolve(did);
        expect(revoked.body.status).toBe("revoked");
        expect(revoked.body.revocationReason).toBe("superseded");
        // The next test counts hits too: these two writes' echoes must not land in it.
        await untilChangesHeard(metricsUrl(), heard + 3);
      } finally {
        client.close();
      }
    });
  });

  it("over Connect GET too, with the same ETag and 304 as before", async () => {
    const name = "kept-connect-get";
    const did = `did:reg:main:skill:${name}@1.0.0`;
    const rest = registryClient("rest", registry.url);
    const heard = await changesHeard(metricsUrl());
    expect((await rest.create(await publisher.entry(name, "1.0.0"), token)).code).toBe("ok");
    await untilChangesHeard(metricsUrl(), heard + 1);
    const url = `${registry.url}/registry.v1.RegistryService/ResolveEntry?connect=v1&encoding=json&message=${encodeURIComponent(JSON.stringify({ did }))}`;
    const first = await fetch(url);
    const etag = first.headers.get("etag") as string;
    const before = await hits();
    const second = await fetch(url);
    expect(await second.text()).toBe(await first.text());
    expect(second.headers.get("etag")).toBe(etag);
    expect((await fetch(url, { headers: { "if-none-match": etag } })).status).toBe(304);
    expect(await hits()).toBe(before + 2);
    await rest.revoke(did, await publisher.revocation(did, "gone"), token);
    const after = await fetch(url);
    expect(after.headers.get("etag")).not.toBe(etag);
    expect(((await after.json()) as { entry: { status: string } }).entry.status).toBe("revoked");
  });
});

describe("kept answers under a read rate limit", () => {
  let setup: PublishingSetup;
  beforeAll(async () => {
    setup = await startPublishingRegistry(["registry.publish.skill"], { rateLimitRps: 0.01, rateLimitBurst: 40 });
  });
  afterAll(() => setup?.close());

  it("still draw every read from the bucket, with fresh RateLimit headers, and are refused past it on every protocol", async () => {
    const { registry, publisher, token } = setup;
    const did = "did:reg:main:skill:kept-limited@1.0.0";
    const rest = registryClient("rest", registry.url);
    expect((await rest.create(await publisher.entry("kept-limited", "1.0.0"), token)).code).toBe("ok");
    const url = `${registry.url}/v1/entries/${encodeURIComponent(did)}`;
    const remaining: number[] = [];
    for (let i = 0; i < 38; i++) {
      const response = await fetch(url);
      expect(response.status).toBe(200);
      remaining.push(Number(/r=(\d+)/.exec(response.headers.get("ratelimit") ?? "")?.[1]));
    }
    // Each answer says what is left now, not what was left when the answer was first made.
    expect(remaining).toEqual(remaining.map((_, index) => 39 - index));
    for (const protocol of PROTOCOLS) {
      const client = registryClient(protocol, registry.url);
      try {
        const results = [];
        for (let i = 0; i < 5; i++) results.push((await client.resolve(did)).code);
        expect(results).toContain("resource_exhausted");
      } finally {
        client.close();
      }
    }
    expect((await fetch(url)).status).toBe(429);
  });
});

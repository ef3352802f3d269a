import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, type Message } from "@bufbuild/protobuf";
import { createReadAnswers } from "../../src/edge/read-answers.js";
import type { ReadAnswers } from "../../src/transport/kept-answers.js";
import type { ChangeFeed, ChangeListener } from "../../src/storage/entry-cache.js";
import { startPublishingRegistry, type PublishingSetup, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { PROTOCOLS, registryClient } from "../support/protocol-clients.js";
import { changesHeard, sample, untilChangesHeard } from "../support/metric-samples.js";
import { ResolveEntryResponseSchema } from "../../gen/registry/v1/registry_service_pb.js";

/**
 * Kept answers (src/edge/read-answers.ts): the cache on its own, driven by a feed the test
 * controls, then through a running registry on every protocol, where a write must show on the very
 * next read of the same request and interceptors (rate limits) must still run for every call.
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

const answer = (version: string): Message => create(ResolveEntryResponseSchema, { entry: { version, description: "x".repeat(100) } });
const target = { method: { idempotency: 1 } };

/** Keeps `version` as the answer to `key` under `tag`, as the invoker does after a handler ran. */
function keep(answers: ReadAnswers, key: string, tag: string, version: string): void {
  const slot = answers.find(key) ?? answers.remember(key, { target, input: {} });
  slot.keep(slot.mark(), ResolveEntryResponseSchema, answer(version), [["cache-control", "no-cache"]], tag);
}

const keptVersion = (answers: ReadAnswers, key: string) => (answers.find(key)?.answer()?.message as { entry?: { version: string } } | undefined)?.entry?.version;

describe("kept answers, on their own", () => {
  it("answer the same request until its tag changes; other tags keep theirs", () => {
    const feed = manualFeed();
    const answers = createReadAnswers({ changes: feed });
    keep(answers, "a@1", "a", "1.0.0");
    keep(answers, "a", "a", "1.0.0");
    keep(answers, "b", "b", "2.0.0");
    expect(keptVersion(answers, "a@1")).toBe("1.0.0");
    expect(answers.find("a@1")?.answer()?.header).toEqual([["cache-control", "no-cache"]]);
    feed.change("a");
    expect(keptVersion(answers, "a@1")).toBeUndefined();
    expect(keptVersion(answers, "a")).toBeUndefined();
    expect(keptVersion(answers, "b")).toBe("2.0.0");
    // The request itself is still remembered: only its answer went.
    expect(answers.find("a@1")?.decoded).toEqual({ target, input: {} });
  });

  it("do not keep an answer whose handler ran while a change arrived (the race with a write)", () => {
    const feed = manualFeed();
    const answers = createReadAnswers({ changes: feed });
    const slot = answers.remember("a", { target, input: {} });
    const mark = slot.mark();
    // A write commits and is heard of while the handler is still reading.
    feed.change("a");
    slot.keep(mark, ResolveEntryResponseSchema, answer("1.0.0"), [], "a");
    expect(slot.answer()).toBeUndefined();
    // A change to any tag counts: which one the handler read is not known before it ran.
    const other = slot.mark();
    feed.change("unrelated");
    slot.keep(other, ResolveEntryResponseSchema, answer("1.0.0"), [], "a");
    expect(slot.answer()).toBeUndefined();
    slot.keep(slot.mark(), ResolveEntryResponseSchema, answer("2.0.0"), [], "a");
    expect(keptVersion(answers, "a")).toBe("2.0.0");
  });

  it("keep nothing, and answer nothing kept, while the feed is down; a reset forgets every answer", () => {
    const feed = manualFeed();
    const answers = createReadAnswers({ changes: feed });
    keep(answers, "a", "a", "1.0.0");
    feed.live = false;
    expect(keptVersion(answers, "a")).toBeUndefined();
    keep(answers, "b", "b", "1.0.0");
    expect(keptVersion(answers, "b")).toBeUndefined();
    feed.live = true;
    keep(answers, "a", "a", "1.0.0");
    keep(answers, "b", "b", "1.0.0");
    feed.reset();
    expect(keptVersion(answers, "a")).toBeUndefined();
    expect(keptVersion(answers, "b")).toBeUndefined();
  });

  it("expire after the TTL, and stay within their count and byte bounds, least recently used first", () => {
    let clock = 0;
    const answers = createReadAnswers({ changes: manualFeed(), ttlMs: 1000, maxRequests: 2, now: () => clock });
    keep(answers, "a", "a", "1.0.0");
    clock = 1001;
    expect(keptVersion(answers, "a")).toBeUndefined();
    keep(answers, "a", "a", "1.0.0");
    keep(answers, "b", "b", "1.0.0");
    answers.find("a");
    keep(answers, "c", "c", "1.0.0");
    expect(answers.size).toBe(2);
    expect(answers.find("b")).toBeUndefined();
    expect(keptVersion(answers, "a")).toBe("1.0.0");

    const small = createReadAnswers({ changes: manualFeed(), maxBytes: 4_000 });
    for (const key of ["a", "b", "c", "d", "e", "f"]) keep(small, key, key, "1.0.0");
    expect(small.bytes).toBeLessThanOrEqual(4_000);
    expect(small.size).toBeLessThan(6);
    expect(keptVersion(small, "f")).toBe("1.0.0");
    // A changed tag gives its bytes back.
    const before = small.bytes;
    const feed = manualFeed();
    const tagged = createReadAnswers({ changes: feed });
    keep(tagged, "a", "a", "1.0.0");
    const withAnswer = tagged.bytes;
    feed.change("a");
    expect(tagged.bytes).toBeLessThan(withAnswer);
    expect(before).toBeGreaterThan(0);
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

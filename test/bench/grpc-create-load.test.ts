import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublisher as createBenchPublisher, nowToTheSecond, signedEntry, type BenchPublisher } from "../../bench/entry-signer.js";
import { grpcCreateBody, grpcCreateLoad } from "../../bench/grpc-create-load.js";
import { startTestRegistry, type TestRegistry } from "../support/registry-fixture.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";

/**
 * The benchmark's gRPC create generator against the real server: each call carries a distinct
 * pre-signed entry and counts as created only with grpc-status 0, so refused creates cannot pass
 * for fast ones.
 */

let db: TestDatabase;
let registry: TestRegistry;
let publisher: BenchPublisher;
let token: string;

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database);
  publisher = createBenchPublisher();
  token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
}, 60_000);
afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

function pool(run: string, count: number): { bodies: Buffer[]; more: () => Buffer; names: string[] } {
  const publishedAt = nowToTheSecond();
  const names = Array.from({ length: count }, (_, i) => `grpc-load-${run}-${i}`);
  let extra = 0;
  return {
    names,
    bodies: names.map((name) => grpcCreateBody(JSON.stringify(signedEntry(publisher, name, "1.0.0", publishedAt)))),
    more: () => {
      const name = `grpc-load-${run}-extra-${extra++}`;
      names.push(name);
      return grpcCreateBody(JSON.stringify(signedEntry(publisher, name, "1.0.0", publishedAt)));
    },
  };
}

// A second of warmup takes the server's first creates (cold plans and code) out of the counted
// window: on a loaded machine they alone outlasted a one-second window, and nothing was counted.
const shape = { connections: 2, streamsPerConnection: 4, durationSeconds: 1, warmupSeconds: 1 };

describe("gRPC create load", () => {
  it("creates a distinct entry with every call, each then resolvable", async () => {
    const { bodies, more, names } = pool("ok", 50);
    const result = await grpcCreateLoad({ ...shape, url: registry.url, token }, bodies, more);
    expect(result.notCreatedTotal).toBe(0);
    expect(result.failureSamples).toEqual([]);
    expect(result.ok).toBeGreaterThan(0);
    expect(result.requestsPerSecond).toBe(result.ok);
    const sent = result.bodiesUsed + result.signedDuringRun;
    for (const name of [names[0]!, names[sent - 1]!]) {
      const response = await fetch(`${registry.url}/v1/entries/did:reg:main:skill:${name}%401.0.0`);
      expect(response.status).toBe(200);
    }
  }, 30_000);

  it("counts refused creates as not created, with their gRPC status", async () => {
    const { bodies, more } = pool("refused", 20);
    const result = await grpcCreateLoad({ ...shape, url: registry.url, token: "not-a-token" }, bodies, more);
    expect(result.ok).toBe(0);
    expect(result.requestsPerSecond).toBe(0);
    expect(result.notCreatedTotal).toBeGreaterThan(0);
    expect(result.failureSamples[0]).toMatch(/^HTTP 200 grpc-status 16/);
  }, 30_000);
});

import { expect } from "vitest";
import type { TestPublisher, TestRegistry } from "../support/registry-fixture.js";
import { createPublisher } from "../support/registry-fixture.js";

/** An entry as the API returns it (REST JSON). */
export type EntryJson = Record<string, any>;

export interface SeedEntry {
  readonly publisher: "a" | "b";
  readonly name: string;
  readonly version: string;
  readonly fields: Record<string, unknown>;
}

/**
 * A small registry that exercises every discovery field: two publishers and types, stable and
 * prerelease versions, bonds in two units (one with 18 fraction digits), nested and array data,
 * dates on both sides of a UTC midnight, LIKE's wildcard characters inside descriptions, and
 * revoked versions.
 */
export const SEED: readonly SeedEntry[] = [
  {
    publisher: "a",
    name: "web-search",
    version: "1.0.0",
    fields: {
      tags: ["search", "web"],
      description: "Searches the web",
      publishedAt: "2025-01-15T10:00:00.000Z",
      data: { license: "MIT", runtime: { os: "linux", memoryMb: 256 } },
      bondAmount: "100 USDC",
    },
  },
  {
    publisher: "a",
    name: "web-search",
    version: "1.2.0",
    fields: {
      tags: ["search", "web", "fast"],
      description: "Searches the web faster: handles 1000 pages",
      publishedAt: "2025-06-01T00:00:00.000Z",
      data: { license: "MIT", runtime: { os: "linux", memoryMb: 512 } },
      bondAmount: "250 USDC",
    },
  },
  {
    publisher: "a",
    name: "web-search",
    version: "2.0.0-rc.1",
    fields: {
      tags: ["search"],
      description: "Next search",
      publishedAt: "2025-06-01T23:59:59.999Z",
      data: { license: "Apache-2.0" },
      bondAmount: "",
    },
  },
  {
    publisher: "b",
    name: "translator",
    version: "0.9.0",
    fields: {
      entryType: "agent",
      tags: ["translation", "text"],
      description: "Translates 100% of text_files",
      publishedAt: "2025-06-02T00:00:00.000Z",
      data: { license: "Apache-2.0", languages: ["en", "de"] },
      bondAmount: "0.5 ETH",
    },
  },
  {
    publisher: "b",
    name: "translator",
    version: "1.0.0",
    fields: {
      entryType: "agent",
      tags: ["translation"],
      description: "It's a translator for text files",
      publishedAt: "2026-01-10T08:30:00.000Z",
      data: { license: "MIT", languages: ["en", "fr"], runtime: { os: "macos", memoryMb: 1024 } },
      bondAmount: "2 ETH",
    },
  },
  {
    publisher: "a",
    name: "weather",
    version: "1.0.0",
    fields: { tags: ["weather", "web"], description: "Weather", publishedAt: "2026-02-01T12:00:00.000Z", data: {}, bondAmount: "" },
  },
  {
    publisher: "a",
    name: "weather",
    version: "1.1.0",
    fields: {
      tags: ["weather"],
      description: "WEATHER reports (beta)",
      publishedAt: "2026-03-01T12:00:00.000Z",
      data: { runtime: { os: "any" } },
      bondAmount: "10 USDC",
    },
  },
  {
    publisher: "b",
    name: "pdf-tools",
    version: "3.0.0",
    fields: {
      tags: ["pdf"],
      description: "PDF toolkit",
      publishedAt: "2026-04-01T00:00:00.000Z",
      data: { license: null, pages: 10 },
      bondAmount: "",
    },
  },
  {
    publisher: "b",
    name: "pdf-tools",
    version: "10.0.0",
    fields: {
      tags: ["pdf", "text"],
      description: "",
      publishedAt: "2026-05-01T00:00:00.000Z",
      data: { pages: 200 },
      bondAmount: "1000000.000000000000000001 USDC",
    },
  },
];

/** Versions revoked after seeding, so revoked entries are there to be left out or asked for. */
export const REVOKED = ["did:reg:main:skill:weather@1.0.0", "did:reg:main:agent:translator@0.9.0"];

export interface SeededRegistry {
  readonly publishers: Record<"a" | "b", TestPublisher>;
  /** Every stored entry, revoked ones included, as resolve returns it; newest first. */
  readonly all: EntryJson[];
}

export async function seedRegistry(registry: TestRegistry): Promise<SeededRegistry> {
  const publishers = { a: await createPublisher(), b: await createPublisher() };
  const scopes = ["registry.publish.skill", "registry.publish.agent"];
  const tokens = {
    a: await registry.accessToken(publishers.a.did, scopes),
    b: await registry.accessToken(publishers.b.did, scopes),
  };
  for (const seed of SEED) {
    const entry = await publishers[seed.publisher].entry(seed.name, seed.version, seed.fields);
    const response = await send(registry, "POST", "/v1/entries", entry, tokens[seed.publisher]);
    expect(response.status, JSON.stringify(await response.clone().json())).toBe(201);
  }
  for (const did of REVOKED) {
    const owner = SEED.find((seed) => did.endsWith(`:${seed.name}@${seed.version}`))!.publisher;
    const response = await send(
      registry,
      "DELETE",
      `/v1/entries/${encodeURIComponent(did)}`,
      await publishers[owner].revocation(did, "test"),
      tokens[owner],
    );
    expect(response.status).toBe(200);
  }
  const all: EntryJson[] = [];
  for (const seed of SEED) {
    const type = (seed.fields.entryType as string | undefined) ?? "skill";
    const response = await fetch(`${registry.url}/v1/entries/${encodeURIComponent(`did:reg:main:${type}:${seed.name}@${seed.version}`)}`);
    all.push((await response.json()) as EntryJson);
  }
  all.sort((x, y) => Number(BigInt(y.sequence) - BigInt(x.sequence)));
  return { publishers, all };
}

export function send(registry: TestRegistry, method: string, path: string, body: unknown, token?: string): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  return fetch(registry.url + path, { method, headers, body: JSON.stringify(body) });
}

/** Walks every page of a listing and returns all entries, checking each page's size. */
export async function walk(
  call: (cursor: string) => Promise<{ entries: EntryJson[]; nextCursor?: string }>,
  pageSize: number,
): Promise<EntryJson[]> {
  const seen: EntryJson[] = [];
  let cursor = "";
  for (let page = 0; page < 10_000; page++) {
    const result = await call(cursor);
    expect(result.entries.length).toBeLessThanOrEqual(pageSize);
    seen.push(...result.entries);
    if (result.nextCursor === undefined) return seen;
    expect(result.entries.length).toBe(pageSize);
    cursor = result.nextCursor;
  }
  throw new Error("listing did not end");
}

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { registryClient, type RegistryCalls } from "../support/protocol-clients.js";
import { send, walk, type EntryJson } from "./discovery-fixture.js";

/**
 * Keyset paging through the running server: complete walks while another client keeps
 * publishing, and cursors that must be refused.
 */

let db: TestDatabase;
let registry: TestRegistry;
let rest: RegistryCalls;
let publisher: TestPublisher;
let token: string;
let published = 0;

const INITIAL = 57;

async function publish(count: number, prefix: string): Promise<void> {
  for (let i = 0; i < count; i++) {
    const n = published++;
    // Every third entry is tagged, and versions differ so version order is not sequence order.
    const entry = await publisher.entry(`${prefix}-${n % 13}`, `${n % 7}.${Math.floor(n / 13)}.${n % 3}`, {
      tags: n % 3 === 0 ? ["paged", "web"] : ["web"],
      description: `entry ${n}`,
    });
    const response = await send(registry, "POST", "/v1/entries", entry, token);
    expect(response.status).toBe(201);
  }
}

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database, { rateLimitRps: 0 });
  rest = registryClient("rest", registry.url);
  publisher = await createPublisher();
  token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
  await publish(INITIAL, "page");
});
afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

/** Every row of a query, through as many pages of 100 as it takes. */
async function allMatching(query: string): Promise<EntryJson[]> {
  return walk(async (cursor) => {
    const result = await rest.query({ query, limit: 100, cursor });
    expect(result.code, result.message).toBe("ok");
    return result.body;
  }, 100);
}

/** Walks a listing while `publish` runs alongside, one new entry between pages. */
async function walkWhilePublishing(call: (cursor: string) => Promise<{ entries: EntryJson[]; nextCursor?: string }>, pageSize: number) {
  let publishing = Promise.resolve();
  return walk(async (cursor) => {
    await publishing;
    const page = await call(cursor);
    publishing = publish(1, "late");
    return page;
  }, pageSize);
}

const ORDERS = [
  { name: "newest first (default)", orderBy: "" },
  { name: "oldest first", orderBy: "ORDER BY sequence ASC" },
  { name: "by version, then newest", orderBy: "ORDER BY version DESC" },
  { name: "mixed directions", orderBy: "ORDER BY description ASC, published_at DESC" },
];

describe("walking every page while other clients keep publishing", () => {
  for (const order of ORDERS) {
    it(`query language, ${order.name}: each match exactly once, in order`, async () => {
      const query = `SELECT entry_did, sequence, version, description FROM entries WHERE tags CONTAINS 'web' ${order.orderBy}`;
      const before = (await allMatching(`${query} LIMIT 10000`)).map((row) => row.entryDid);
      const seen = await walkWhilePublishing(async (cursor) => (await rest.query({ query, limit: 7, cursor })).body, 7);
      const after = (await allMatching(`${query} LIMIT 10000`)).map((row) => row.entryDid);
      const dids = seen.map((row) => row.entryDid);
      expect(after.length).toBeGreaterThan(before.length);
      // Never twice; nothing that matched when the walk began is skipped; and the walk is in the
      // listing's order. Entries published meanwhile are visited only where the order puts them
      // after the cursor, which is why the walk may hold some of them.
      expect(new Set(dids).size).toBe(dids.length);
      expect(dids.filter((did) => before.includes(did))).toEqual(before);
      expect(after.filter((did) => dids.includes(did))).toEqual(dids);
      if (order.orderBy === "") expect(dids).toEqual(before);
    });
  }

  it("structured discover: each match once, and the same total on every page", async () => {
    const body = { conditions: [{ field: "tags", op: "CONTAINS", value: "paged" }], limit: 4 };
    const first = await rest.discover(body);
    const totals: number[] = [];
    const seen = await walkWhilePublishing(async (cursor) => {
      const result = await rest.discover({ ...body, cursor });
      expect(result.code, result.message).toBe("ok");
      totals.push(result.body.total);
      return result.body;
    }, 4);
    const dids = seen.map((e) => e.entryDid);
    expect(new Set(dids).size).toBe(dids.length);
    expect(dids.length).toBe(first.body.total);
    expect(new Set(totals)).toEqual(new Set([first.body.total]));
  });

  it("the page size may change from page to page", async () => {
    const query = "SELECT entry_did FROM entries ORDER BY sequence";
    const first = await rest.query({ query, limit: 3 });
    const second = await rest.query({ query, limit: 5, cursor: first.body.nextCursor });
    const all = await allMatching(`${query} LIMIT 8`);
    expect([...first.body.entries, ...second.body.entries]).toEqual(all);
  });

  it("a cursor works on another registry process sharing the database", async () => {
    const other = await startTestRegistry(db.database, { rateLimitRps: 0 });
    try {
      const query = "SELECT entry_did FROM entries ORDER BY sequence";
      const first = await rest.query({ query, limit: 2 });
      const second = await registryClient("rest", other.url).query({ query, limit: 2, cursor: first.body.nextCursor });
      expect(second.code, second.message).toBe("ok");
      expect(second.body.entries).toEqual((await allMatching(`${query} LIMIT 4`)).slice(2));
    } finally {
      await other.close();
    }
  });
});

describe("total is exact up to the count limit", () => {
  const web = { conditions: [{ field: "tags", op: "CONTAINS", value: "web" }], limit: 3 };

  it("past the limit total is the limit and a lower bound, on every page", async () => {
    const limited = await startTestRegistry(db.database, { rateLimitRps: 0, discoveryTotalLimit: 5 });
    try {
      const client = registryClient("rest", limited.url);
      const everything = (await rest.discover({ ...web, limit: 1 })).body.total;
      expect(everything).toBeGreaterThan(5);
      const first = await client.discover(web);
      expect(first.body).toMatchObject({ total: 5, totalIsLowerBound: true });
      const second = await client.discover({ ...web, cursor: first.body.nextCursor });
      expect(second.body).toMatchObject({ total: 5, totalIsLowerBound: true });
      const few = await client.discover({ conditions: [{ field: "sequence", op: "<=", value: 3 }] });
      expect(few.body).toMatchObject({ total: 3, totalIsLowerBound: false });
      const exactlyFive = await client.discover({ conditions: [{ field: "sequence", op: "<=", value: 5 }] });
      expect(exactlyFive.body).toMatchObject({ total: 5, totalIsLowerBound: false });
    } finally {
      await limited.close();
    }
  });

  it("with DISCOVERY_TOTAL_LIMIT=0 every match is counted", async () => {
    const unlimited = await startTestRegistry(db.database, { rateLimitRps: 0, discoveryTotalLimit: 0 });
    try {
      const all = await allMatching("SELECT entry_did FROM entries WHERE tags CONTAINS 'web'");
      const result = await registryClient("rest", unlimited.url).discover(web);
      expect(result.body).toMatchObject({ total: all.length, totalIsLowerBound: false });
    } finally {
      await unlimited.close();
    }
  });
});

describe("cursors the registry refuses", () => {
  const query = "SELECT entry_did FROM entries WHERE tags CONTAINS 'web'";

  async function cursorOf(body: Record<string, unknown>, endpoint: "query" | "discover" = "query"): Promise<string> {
    const result = endpoint === "query" ? await rest.query(body) : await rest.discover(body);
    expect(typeof result.body.nextCursor).toBe("string");
    return result.body.nextCursor;
  }

  it("a cursor of another query", async () => {
    const cursor = await cursorOf({ query, limit: 2 });
    const result = await rest.query({ query: `${query} AND version >= '1.0.0'`, limit: 2, cursor });
    expect(result.httpStatus).toBe(400);
    expect(result.fields).toEqual(["cursor"]);
    expect(result.message).toContain("belongs to another query");
  });

  it("a cursor of the same query with another order or LIMIT", async () => {
    const cursor = await cursorOf({ query, limit: 2 });
    for (const other of [`${query} ORDER BY version`, `${query} LIMIT 50`]) {
      const result = await rest.query({ query: other, limit: 2, cursor });
      expect(result.code).toBe("invalid_argument");
      expect(result.message).toContain("belongs to another query");
    }
  });

  it("a cursor of other conditions, and of the other endpoint", async () => {
    const cursor = await cursorOf({ conditions: [{ field: "tags", op: "CONTAINS", value: "web" }], limit: 2 }, "discover");
    const otherConditions = await rest.discover({ conditions: [{ field: "tags", op: "CONTAINS", value: "paged" }], limit: 2, cursor });
    expect(otherConditions.code).toBe("invalid_argument");
    expect(otherConditions.fields).toEqual(["cursor"]);
    const otherEndpoint = await rest.query({ query: "SELECT * FROM entries WHERE tags CONTAINS 'web'", limit: 2, cursor });
    expect(otherEndpoint.code).toBe("invalid_argument");
    expect(otherEndpoint.fields).toEqual(["cursor"]);
  });

  it("the same conditions in another key order share cursors", async () => {
    const conditions = [{ field: "tags", op: "CONTAINS", value: "web" }];
    const cursor = await cursorOf({ conditions, limit: 2 }, "discover");
    const reordered = await rest.discover({ cursor, limit: 2, conditions: [{ value: "web", op: "CONTAINS", field: "tags" }] });
    expect(reordered.code, reordered.message).toBe("ok");
  });

  it("a tampered cursor, at any byte", async () => {
    const cursor = await cursorOf({ query, limit: 2 });
    for (const index of [0, 5, Math.floor(cursor.length / 2), cursor.length - 2]) {
      const flipped = cursor.slice(0, index) + (cursor[index] === "A" ? "B" : "A") + cursor.slice(index + 1);
      const result = await rest.query({ query, limit: 2, cursor: flipped });
      expect(result.httpStatus).toBe(400);
      expect(result.fields).toEqual(["cursor"]);
    }
    for (const garbage of ["x", "not a cursor!", "A".repeat(100), "%27%20OR%201%3D1"]) {
      const result = await rest.query({ query, limit: 2, cursor: garbage });
      expect(result.code).toBe("invalid_argument");
    }
  });

  it("an expired cursor", async () => {
    const shortLived = await startTestRegistry(db.database, { rateLimitRps: 0, cursorTtlSeconds: 1 });
    try {
      const client = registryClient("rest", shortLived.url);
      const first = await client.query({ query, limit: 2 });
      const fresh = await client.query({ query, limit: 2, cursor: first.body.nextCursor });
      expect(fresh.code).toBe("ok");
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const expired = await client.query({ query, limit: 2, cursor: first.body.nextCursor });
      expect(expired.code).toBe("invalid_argument");
      expect(expired.message).toContain("has expired");
    } finally {
      await shortLived.close();
    }
  });
});

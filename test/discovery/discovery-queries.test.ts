import { afterAll, beforeAll, describe, expect, it } from "vitest";
import semver from "semver";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { startTestRegistry, type TestRegistry } from "../support/registry-fixture.js";
import { PROTOCOLS, registryClient, type RegistryCalls } from "../support/protocol-clients.js";
import { seedRegistry, type EntryJson, type SeededRegistry } from "./discovery-fixture.js";

/**
 * Discovery through the running server: each case states its question once as a predicate over
 * the stored entries (the oracle), and once or twice as a request: structured conditions and/or
 * the query language. Both forms must return exactly what the oracle picks, in the same order,
 * so they also agree with each other.
 */

let db: TestDatabase;
let registry: TestRegistry;
let seeded: SeededRegistry;
let rest: RegistryCalls;

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database, { rateLimitRps: 0 });
  seeded = await seedRegistry(registry);
  rest = registryClient("rest", registry.url);
});
afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

const active = (e: EntryJson) => e.status === "active";
/** An entry's name, from its DID (entries carry no separate name field). */
const nameOf = (e: EntryJson): string => e.entryDid.split(":")[4]!.split("@")[0]!;
const bond = (e: EntryJson): [number, string] | undefined => {
  if (e.bondAmount === "") return undefined;
  const [amount, unit] = e.bondAmount.split(" ");
  return [Number(amount), unit];
};
const day = (e: EntryJson) => e.publishedAt.slice(0, 10);
const at = (e: EntryJson) => Date.parse(e.publishedAt);
const memory = (e: EntryJson) => e.data?.runtime?.memoryMb;
const publisherB = () => seeded.publishers.b.did;
/** The latest revocation time among the seeded entries (RFC 3339, so text order is time order). */
const lastRevocation = (): string =>
  seeded.all
    .map((e) => e.revokedAt)
    .filter((t): t is string => t !== undefined)
    .sort()
    .at(-1)!;

interface Case {
  readonly name: string;
  readonly ql?: string | (() => string);
  readonly conditions?: readonly Record<string, unknown>[] | (() => readonly Record<string, unknown>[]);
  readonly entryType?: string;
  readonly expect: (e: EntryJson) => boolean;
  /** The order the oracle's picks come back in; newest first (sequence descending) by default. */
  readonly order?: (x: EntryJson, y: EntryJson) => number;
}

const bySequenceDesc = (x: EntryJson, y: EntryJson) => Number(BigInt(y.sequence) - BigInt(x.sequence));
const bySequenceAsc = (x: EntryJson, y: EntryJson) => -bySequenceDesc(x, y);

const CASES: readonly Case[] = [
  { name: "everything active, newest first", ql: "SELECT * FROM entries", conditions: [], expect: active },
  {
    name: "tags CONTAINS",
    ql: "SELECT * FROM entries WHERE tags CONTAINS 'search'",
    conditions: [{ field: "tags", op: "CONTAINS", value: "search" }],
    expect: (e) => active(e) && e.tags.includes("search"),
  },
  {
    name: "entryType through the request member",
    entryType: "agent",
    ql: "SELECT * FROM entries WHERE entry_type = 'agent'",
    expect: (e) => active(e) && e.entryType === "agent",
  },
  {
    name: "version >= by SemVer precedence (10.0.0 above 3.0.0, rc below release)",
    ql: "SELECT * FROM entries WHERE version >= '1.0.0'",
    conditions: [{ field: "version", op: ">=", value: "1.0.0" }],
    expect: (e) => active(e) && semver.gte(e.version, "1.0.0"),
  },
  {
    name: "version < 2.0.0 includes 2.0.0-rc.1",
    ql: "SELECT * FROM entries WHERE version < '2.0.0'",
    conditions: [{ field: "version", op: "<", value: "2.0.0" }],
    expect: (e) => active(e) && semver.lt(e.version, "2.0.0"),
  },
  {
    name: "version = exact",
    ql: "SELECT * FROM entries WHERE version = '1.0.0'",
    conditions: [{ field: "version", op: "=", value: "1.0.0" }],
    expect: (e) => active(e) && e.version === "1.0.0",
  },
  {
    name: "version IN with an array",
    ql: "SELECT * FROM entries WHERE version IN ('1.0.0', '10.0.0')",
    conditions: [{ field: "version", op: "IN", value: ["1.0.0", "10.0.0"] }],
    expect: (e) => active(e) && ["1.0.0", "10.0.0"].includes(e.version),
  },
  {
    name: "IN with a comma-separated string",
    conditions: [{ field: "name", op: "IN", value: "weather, pdf-tools" }],
    ql: "SELECT * FROM entries WHERE name IN ('weather', 'pdf-tools')",
    expect: (e) => active(e) && ["weather", "pdf-tools"].includes(nameOf(e)),
  },
  {
    name: "publishedAt >= a date",
    ql: "SELECT * FROM entries WHERE published_at >= '2025-06-01'",
    conditions: [{ field: "publishedAt", op: ">=", value: "2025-06-01" }],
    expect: (e) => active(e) && day(e) >= "2025-06-01",
  },
  {
    name: "publishedAt = a date is that whole UTC day",
    ql: "SELECT * FROM entries WHERE published_at = '2025-06-01'",
    conditions: [{ field: "publishedAt", op: "=", value: "2025-06-01" }],
    expect: (e) => active(e) && day(e) === "2025-06-01",
  },
  {
    name: "publishedAt > a date is after that day",
    ql: "SELECT * FROM entries WHERE published_at > '2025-06-01'",
    conditions: [{ field: "publishedAt", op: ">", value: "2025-06-01" }],
    expect: (e) => active(e) && day(e) > "2025-06-01",
  },
  {
    name: "publishedAt <= a date includes that day",
    ql: "SELECT * FROM entries WHERE published_at <= '2025-06-01'",
    conditions: [{ field: "publishedAt", op: "<=", value: "2025-06-01" }],
    expect: (e) => active(e) && day(e) <= "2025-06-01",
  },
  {
    name: "publishedAt < an RFC 3339 time with an offset",
    ql: "SELECT * FROM entries WHERE published_at < '2025-06-01T02:00:00+02:00'",
    conditions: [{ field: "publishedAt", op: "<", value: "2025-06-01T02:00:00+02:00" }],
    expect: (e) => active(e) && at(e) < Date.parse("2025-06-01T00:00:00Z"),
  },
  {
    name: "publishedAt != a time",
    ql: "SELECT * FROM entries WHERE published_at != '2025-06-01T00:00:00.000Z'",
    conditions: [{ field: "publishedAt", op: "!=", value: "2025-06-01T00:00:00.000Z" }],
    expect: (e) => active(e) && e.publishedAt !== "2025-06-01T00:00:00.000Z",
  },
  {
    name: "bondAmount >= within one unit",
    ql: "SELECT * FROM entries WHERE bond_amount >= '100 USDC'",
    conditions: [{ field: "bondAmount", op: ">=", value: "100 USDC" }],
    expect: (e) => active(e) && bond(e)?.[1] === "USDC" && bond(e)![0] >= 100,
  },
  {
    name: "bondAmount < in another unit",
    ql: "SELECT * FROM entries WHERE bond_amount < '1 ETH'",
    conditions: [{ field: "bondAmount", op: "<", value: "1 ETH" }],
    expect: (e) => active(e) && bond(e)?.[1] === "ETH" && bond(e)![0] < 1,
  },
  {
    name: "bondAmount = with 18 fraction digits is exact",
    ql: "SELECT * FROM entries WHERE bond_amount = '1000000.000000000000000001 USDC'",
    conditions: [{ field: "bondAmount", op: "=", value: "1000000.000000000000000001 USDC" }],
    expect: (e) => active(e) && e.bondAmount === "1000000.000000000000000001 USDC",
  },
  {
    name: "bondAmount > the same number less its last digit",
    ql: "SELECT * FROM entries WHERE bond_amount > '1000000 USDC'",
    conditions: [{ field: "bondAmount", op: ">", value: "1000000 USDC" }],
    expect: (e) => active(e) && e.bondAmount === "1000000.000000000000000001 USDC",
  },
  {
    name: "bondAmount != leaves out entries without a bond",
    ql: "SELECT * FROM entries WHERE bond_amount != '100 USDC'",
    conditions: [{ field: "bondAmount", op: "!=", value: "100 USDC" }],
    expect: (e) => active(e) && e.bondAmount !== "" && e.bondAmount !== "100 USDC",
  },
  { name: "bond_amount IS NULL", ql: "SELECT * FROM entries WHERE bond_amount IS NULL", expect: (e) => active(e) && e.bondAmount === "" },
  {
    name: "sequence >",
    ql: () => `SELECT * FROM entries WHERE sequence > ${seeded.all.at(-3)!.sequence}`,
    conditions: () => [{ field: "sequence", op: ">", value: seeded.all.at(-3)!.sequence }],
    expect: (e) => active(e) && BigInt(e.sequence) > BigInt(seeded.all.at(-3)!.sequence),
  },
  {
    name: "sequence = as a JSON number",
    conditions: () => [{ field: "sequence", op: "=", value: Number(seeded.all[0]!.sequence) }],
    expect: (e) => active(e) && e.sequence === seeded.all[0]!.sequence,
  },
  {
    name: "description CONTAINS is case-insensitive",
    ql: "SELECT * FROM entries WHERE description CONTAINS 'weather'",
    conditions: [{ field: "description", op: "CONTAINS", value: "weather" }],
    expect: (e) => active(e) && e.description.toLowerCase().includes("weather"),
  },
  {
    name: "CONTAINS '%' is a literal percent sign",
    ql: "SELECT * FROM entries WHERE status = 'revoked' AND description CONTAINS '100%'",
    conditions: [
      { field: "status", op: "=", value: "revoked" },
      { field: "description", op: "CONTAINS", value: "100%" },
    ],
    expect: (e) => e.status === "revoked" && e.description.includes("100%"),
  },
  {
    name: "CONTAINS '_' is a literal underscore",
    ql: "SELECT * FROM entries WHERE status IN ('active', 'revoked') AND description CONTAINS 'text_files'",
    conditions: [
      { field: "status", op: "IN", value: ["active", "revoked"] },
      { field: "description", op: "CONTAINS", value: "text_files" },
    ],
    expect: (e) => e.description.includes("text_files"),
  },
  {
    name: "LIKE uses wildcards",
    ql: "SELECT * FROM entries WHERE name LIKE 'web%'",
    expect: (e) => active(e) && nameOf(e).startsWith("web"),
  },
  {
    name: "LIKE with an escaped wildcard",
    ql: "SELECT * FROM entries WHERE status = 'revoked' AND description LIKE '%100\\% of%'",
    expect: (e) => e.status === "revoked" && e.description.includes("100% of"),
  },
  { name: "NOT LIKE", ql: "SELECT * FROM entries WHERE name NOT LIKE '%e%'", expect: (e) => active(e) && !nameOf(e).includes("e") },
  {
    name: "description IS NULL means absent",
    ql: "SELECT * FROM entries WHERE description IS NULL",
    expect: (e) => active(e) && e.description === "",
  },
  {
    name: "data.<key> = string",
    ql: "SELECT * FROM entries WHERE data.license = 'MIT'",
    conditions: [{ field: "data.license", op: "=", value: "MIT" }],
    expect: (e) => active(e) && e.data?.license === "MIT",
  },
  {
    name: "data.<a>.<b> >= number",
    ql: "SELECT * FROM entries WHERE data.runtime.memoryMb >= 512",
    conditions: [{ field: "data.runtime.memoryMb", op: ">=", value: 512 }],
    expect: (e) => active(e) && typeof memory(e) === "number" && memory(e) >= 512,
  },
  {
    name: "data.<a>.<b> IN",
    ql: "SELECT * FROM entries WHERE data.runtime.os IN ('linux', 'macos')",
    conditions: [{ field: "data.runtime.os", op: "IN", value: ["linux", "macos"] }],
    expect: (e) => active(e) && ["linux", "macos"].includes(e.data?.runtime?.os),
  },
  {
    name: "data array CONTAINS an element",
    ql: "SELECT * FROM entries WHERE status IN ('active','revoked') AND data.languages CONTAINS 'de'",
    conditions: [
      { field: "status", op: "IN", value: "active,revoked" },
      { field: "data.languages", op: "CONTAINS", value: "de" },
    ],
    expect: (e) => (e.data?.languages ?? []).includes("de"),
  },
  {
    name: "data string CONTAINS a substring",
    ql: "SELECT * FROM entries WHERE data.license CONTAINS 'apache'",
    conditions: [{ field: "data.license", op: "CONTAINS", value: "apache" }],
    expect: (e) => active(e) && typeof e.data?.license === "string" && e.data.license.toLowerCase().includes("apache"),
  },
  {
    name: "data.<key> != leaves out missing keys",
    ql: "SELECT * FROM entries WHERE data.license != 'MIT'",
    conditions: [{ field: "data.license", op: "!=", value: "MIT" }],
    expect: (e) => active(e) && typeof e.data?.license === "string" && e.data.license !== "MIT",
  },
  {
    name: "data.<key> IS NULL covers missing and JSON null",
    ql: "SELECT * FROM entries WHERE data.license IS NULL",
    expect: (e) => active(e) && (e.data?.license ?? null) === null,
  },
  {
    name: "isLatest = true",
    ql: "SELECT * FROM entries WHERE is_latest = TRUE",
    conditions: [{ field: "isLatest", op: "=", value: true }],
    expect: (e) => active(e) && e.isLatest,
  },
  {
    name: "isLatest = 'false' as a string",
    conditions: [{ field: "isLatest", op: "=", value: "false" }],
    ql: "SELECT * FROM entries WHERE is_latest = FALSE",
    expect: (e) => active(e) && !e.isLatest,
  },
  {
    name: "status = revoked",
    ql: "SELECT * FROM entries WHERE status = 'revoked'",
    conditions: [{ field: "status", op: "=", value: "revoked" }],
    expect: (e) => e.status === "revoked",
  },
  {
    name: "status != active",
    ql: "SELECT * FROM entries WHERE status != 'active'",
    conditions: [{ field: "status", op: "!=", value: "active" }],
    expect: (e) => e.status !== "active",
  },
  // revokedAt: only revoked entries have one; naming it shows revoked entries, as naming status does.
  {
    name: "revokedAt IS NOT NULL finds the revocations",
    ql: "SELECT * FROM entries WHERE revoked_at IS NOT NULL",
    expect: (e) => e.revokedAt !== undefined,
  },
  {
    name: "revokedAt IS NULL is every entry never revoked",
    ql: "SELECT * FROM entries WHERE revoked_at IS NULL",
    expect: (e) => e.revokedAt === undefined,
  },
  {
    name: "revokedAt >= the last revocation: an incremental poll",
    ql: () => `SELECT * FROM entries WHERE revoked_at >= '${lastRevocation()}'`,
    conditions: () => [{ field: "revokedAt", op: ">=", value: lastRevocation() }],
    expect: (e) => e.revokedAt !== undefined && e.revokedAt >= lastRevocation(),
  },
  {
    name: "revokedAt after a date-only day",
    ql: "SELECT * FROM entries WHERE revoked_at > '2020-01-01'",
    conditions: [{ field: "revokedAt", op: ">", value: "2020-01-01" }],
    expect: (e) => e.revokedAt !== undefined,
  },
  {
    name: "NOT of a comparison with no revokedAt is true",
    ql: () => `SELECT * FROM entries WHERE NOT revoked_at >= '${lastRevocation()}'`,
    expect: (e) => !(e.revokedAt !== undefined && e.revokedAt >= lastRevocation()),
  },
  {
    name: "publisherDid =",
    ql: () => `SELECT * FROM entries WHERE publisher_did = '${publisherB()}'`,
    conditions: () => [{ field: "publisherDid", op: "=", value: publisherB() }],
    expect: (e) => active(e) && e.publisherDid === publisherB(),
  },
  {
    name: "entryDid = (the interface's own example)",
    ql: "SELECT entry_did, entry_type FROM entries WHERE entry_did = 'did:reg:main:skill:web-search@1.2.0' LIMIT 5;",
    conditions: [{ field: "entryDid", op: "=", value: "did:reg:main:skill:web-search@1.2.0" }],
    expect: (e) => e.entryDid === "did:reg:main:skill:web-search@1.2.0",
  },
  {
    name: "name > in code-point order",
    ql: "SELECT * FROM entries WHERE name > 'translator'",
    conditions: [{ field: "name", op: ">", value: "translator" }],
    expect: (e) => active(e) && nameOf(e) > "translator",
  },
  {
    name: "several conditions are ANDed",
    ql: "SELECT * FROM entries WHERE tags CONTAINS 'web' AND version >= '1.1.0' AND entry_type = 'skill'",
    conditions: [
      { field: "tags", op: "CONTAINS", value: "web" },
      { field: "version", op: ">=", value: "1.1.0" },
      { field: "entryType", op: "=", value: "skill" },
    ],
    expect: (e) => active(e) && e.tags.includes("web") && semver.gte(e.version, "1.1.0") && e.entryType === "skill",
  },
  {
    name: "OR, parentheses and NOT",
    ql: "SELECT * FROM entries WHERE (entry_type = 'agent' OR tags CONTAINS 'pdf') AND NOT version < '1.0.0'",
    expect: (e) => active(e) && (e.entryType === "agent" || e.tags.includes("pdf")) && !semver.lt(e.version, "1.0.0"),
  },
  {
    name: "NOT IN",
    ql: "SELECT * FROM entries WHERE name NOT IN ('weather', 'translator')",
    expect: (e) => active(e) && !["weather", "translator"].includes(nameOf(e)),
  },
  {
    name: "NOT of a missing data key is true",
    ql: "SELECT * FROM entries WHERE NOT data.runtime.memoryMb > 300",
    expect: (e) => active(e) && !(typeof memory(e) === "number" && memory(e) > 300),
  },
  {
    name: "keywords in any case, <> for !=",
    ql: "select * from entries where entry_type <> 'agent' ORDER BY sequence desc",
    expect: (e) => active(e) && e.entryType !== "agent",
  },
  {
    name: "ORDER BY version DESC",
    ql: "SELECT * FROM entries ORDER BY version DESC",
    expect: active,
    order: (x, y) => semver.rcompare(x.version, y.version) || bySequenceDesc(x, y),
  },
  {
    name: "ORDER BY published_at ASC, name DESC (mixed directions)",
    ql: "SELECT * FROM entries ORDER BY published_at ASC, name DESC",
    expect: active,
    order: (x, y) => at(x) - at(y) || (nameOf(x) < nameOf(y) ? 1 : nameOf(x) > nameOf(y) ? -1 : 0) || bySequenceDesc(x, y),
  },
  {
    name: "ORDER BY sequence ASC",
    ql: "SELECT * FROM entries WHERE tags CONTAINS 'web' ORDER BY sequence",
    expect: (e) => active(e) && e.tags.includes("web"),
    order: bySequenceAsc,
  },
  {
    name: "ORDER BY data.runtime.memoryMb DESC: missing values last",
    ql: "SELECT * FROM entries ORDER BY data.runtime.memoryMb DESC",
    expect: active,
    order: (x, y) => (memory(y) ?? -1) - (memory(x) ?? -1) || bySequenceDesc(x, y),
  },
];

async function ql(query: string, limit = 100): Promise<EntryJson[]> {
  const result = await rest.query({ query, limit });
  expect(result.code, result.message).toBe("ok");
  return result.body.entries;
}

function expected(test: Case): EntryJson[] {
  return seeded.all.filter(test.expect).sort(test.order ?? bySequenceDesc);
}

describe("discovery answers each question as the oracle does", () => {
  for (const test of CASES) {
    if (test.conditions !== undefined || test.entryType !== undefined) {
      it(`structured: ${test.name}`, async () => {
        const conditions = typeof test.conditions === "function" ? test.conditions() : (test.conditions ?? []);
        const result = await rest.discover({ entryType: test.entryType ?? "", conditions, limit: 100 });
        expect(result.code, result.message).toBe("ok");
        const want = expected(test);
        expect(result.body.entries.map((e: EntryJson) => e.entryDid)).toEqual(want.map((e) => e.entryDid));
        expect(result.body.total).toBe(want.length);
        // Whole entries, exactly as resolve returns them.
        expect(result.body.entries).toEqual(want);
      });
    }
    if (test.ql !== undefined) {
      it(`query language: ${test.name}`, async () => {
        const text = typeof test.ql === "function" ? test.ql() : test.ql!;
        const rows = await ql(text);
        expect(rows.map((row) => row.entryDid)).toEqual(expected(test).map((e) => e.entryDid));
      });
    }
  }

  it("has a case that matches nothing and cases that match many", () => {
    const sizes = CASES.map((test) => expected(test).length);
    expect(sizes).toContain(0);
    expect(Math.max(...sizes)).toBeGreaterThanOrEqual(7);
  });
});

describe("query-language projection", () => {
  it("returns only the selected columns, named as in an entry, data paths nested", async () => {
    const rows = await ql(
      "SELECT name, version, published_at, sequence, tags, is_latest, bond_amount, data.runtime.os FROM entries WHERE name = 'web-search' ORDER BY version",
    );
    const want = expected({
      name: "",
      expect: (e) => active(e) && nameOf(e) === "web-search",
      order: (x, y) => semver.compare(x.version, y.version),
    });
    expect(rows).toEqual(
      want.map((e) => ({
        name: nameOf(e),
        version: e.version,
        publishedAt: e.publishedAt,
        sequence: e.sequence,
        tags: e.tags,
        isLatest: e.isLatest,
        bondAmount: e.bondAmount,
        data: { runtime: { os: e.data?.runtime?.os ?? null } },
      })),
    );
  });

  it("SELECT * returns every queryable column of an entry: not data, signature or the revocation reason", async () => {
    const [row] = await ql("SELECT * FROM entries WHERE entry_did = 'did:reg:main:skill:web-search@1.0.0'");
    const entry = seeded.all.find((e) => e.entryDid === "did:reg:main:skill:web-search@1.0.0")!;
    const { data: _data, signature: _signature, revocationReason: _reason, ...columns } = entry;
    expect(row).toEqual({ ...columns, name: nameOf(entry), revokedAt: null });
  });

  it("SELECT revoked_at gives a revoked entry's time of revocation", async () => {
    const rows = await ql("SELECT entry_did, revoked_at FROM entries WHERE status = 'revoked'");
    const want = expected({ name: "", expect: (e) => e.status === "revoked" });
    expect(rows).toEqual(want.map((e) => ({ entryDid: e.entryDid, revokedAt: e.revokedAt })));
  });
});

describe("query-language LIMIT and page size", () => {
  it("LIMIT bounds the whole listing; limit is the page size", async () => {
    const pages: EntryJson[][] = [];
    let cursor = "";
    do {
      const result = await rest.query({ query: "SELECT entry_did FROM entries LIMIT 5", limit: 2, cursor });
      expect(result.code).toBe("ok");
      pages.push(result.body.entries);
      cursor = result.body.nextCursor ?? "";
    } while (cursor !== "");
    expect(pages.map((page) => page.length)).toEqual([2, 2, 1]);
    expect(pages.flat().map((row) => row.entryDid)).toEqual(
      seeded.all
        .filter(active)
        .slice(0, 5)
        .map((e) => e.entryDid),
    );
  });

  it("pages a filter whose top level is OR without repeating or losing a row", async () => {
    const query = "SELECT entry_did FROM entries WHERE entry_type = 'agent' OR tags CONTAINS 'search' OR status = 'revoked'";
    const rows: string[] = [];
    let cursor = "";
    do {
      const result = await rest.query({ query, limit: 2, cursor });
      expect(result.code).toBe("ok");
      rows.push(...result.body.entries.map((row: EntryJson) => row.entryDid));
      cursor = result.body.nextCursor ?? "";
    } while (cursor !== "");
    const whole = (await rest.query({ query, limit: 100 })).body.entries.map((row: EntryJson) => row.entryDid);
    expect(whole.length).toBeGreaterThan(2);
    expect(rows).toEqual(whole);
  });

  it("the default page size is min(LIMIT, 20)", async () => {
    const result = await rest.query({ query: "SELECT entry_did FROM entries LIMIT 3" });
    expect(result.body.entries).toHaveLength(3);
    expect(result.body.nextCursor).toBeUndefined();
  });

  it("LIMIT 0 returns nothing", async () => {
    const result = await rest.query({ query: "SELECT * FROM entries LIMIT 0" });
    expect(result.body).toEqual({ entries: [] });
  });

  it("a page size over 100 is clamped to 100", async () => {
    const result = await rest.discover({ conditions: [], limit: 1000 });
    expect(result.code).toBe("ok");
    expect(result.body.entries.length).toBe(seeded.all.filter(active).length);
  });
});

interface ErrorCase {
  readonly query: string;
  readonly line?: number;
  readonly column?: number;
  readonly message: string;
}

const QL_ERRORS: readonly ErrorCase[] = [
  { query: "SELECT * FROM entries WHERE", line: 1, column: 28, message: "expected a column, NOT or '(', found end of query" },
  { query: "SELECT *\nFROM entries\nWHERE version > 'latest'", line: 3, column: 17, message: "expected a SemVer version string" },
  { query: "SELECT nope FROM entries", line: 1, column: 8, message: "unknown column 'nope'" },
  { query: "SELECT * FROM entries; DROP TABLE entries", line: 1, column: 24, message: "expected end of query, found identifier 'DROP'" },
  { query: "SELECT * FROM entries WHERE sequence LIKE '1%'", line: 1, column: 29, message: "found LIKE" },
  { query: "SELECT * FROM entries LIMIT 10001", line: 1, column: 29, message: "LIMIT at most 10000" },
  { query: "SELECT * FROM users", line: 1, column: 15, message: "expected entries, found identifier 'users'" },
  { query: "SELECT * FROM entries WHERE name = 'x' -- comment", line: 1, column: 40, message: "'-'" },
  { query: "SELECT * FROM entries WHERE name = 'unterminated", line: 1, column: 36, message: "closing quote" },
  { query: "SELECT * FROM entries WHERE tags = 'x'", line: 1, column: 29, message: "found =" },
  {
    query: "SELECT * FROM entries WHERE published_at > '2026-02-30'",
    line: 1,
    column: 44,
    message: "a date '2026-01-01' or an RFC 3339 time",
  },
  { query: "SELECT * FROM entries WHERE is_latest = 'yes'", line: 1, column: 41, message: "TRUE or FALSE" },
  { query: "SELECT * FROM entries WHERE bond_amount > '100'", line: 1, column: 43, message: "an amount string such as '100 USDC'" },
  { query: "SELECT * FROM entries ORDER BY tags", line: 1, column: 32, message: "a column that can be ordered" },
  { query: `SELECT * FROM entries WHERE data.pages = ${"9".repeat(400)}`, line: 1, column: 42, message: "a finite number" },
  { query: "SELECT * FROM entries WHERE name = 'a\u0000b'", line: 1, column: 36, message: "text without NUL characters" },
  { query: "SELECT * FROM entries WHERE name LIKE 'a\\'", line: 1, column: 29, message: "lone escape character" },
  {
    query: `SELECT * FROM entries WHERE ${Array.from({ length: 65 }, (_, i) => `name = 'n${i}'`).join(" OR ")}`,
    message: "too many predicates: at most 64",
  },
  { query: `SELECT * FROM entries WHERE ${"(".repeat(17)}name = 'x'${")".repeat(17)}`, message: "nesting too deep" },
  { query: `SELECT * FROM entries WHERE name = '${"x".repeat(4100)}'`, message: "at most 4096 bytes" },
];

describe("query-language errors name the line, the column and what was expected", () => {
  for (const error of QL_ERRORS) {
    it(JSON.stringify(error.query.slice(0, 70)), async () => {
      const result = await rest.query({ query: error.query });
      expect(result.httpStatus).toBe(400);
      expect(result.code).toBe("invalid_argument");
      expect(result.fields).toEqual(["query"]);
      if (error.line !== undefined) expect(result.message).toContain(`line ${error.line}, column ${error.column}:`);
      expect(result.message).toContain(error.message);
    });
  }
});

const STRUCTURED_ERRORS: readonly { body: Record<string, unknown>; fields: string[]; message: string }[] = [
  { body: { conditions: [{ field: "nope", op: "=", value: "x" }] }, fields: ["conditions[0].field"], message: 'unknown field "nope"' },
  {
    body: {
      conditions: [
        { field: "name", op: "=", value: "x" },
        { field: "name", op: "~", value: "x" },
      ],
    },
    fields: ["conditions[1].op"],
    message: 'unknown operator "~"',
  },
  { body: { conditions: [{ field: "tags", op: "=", value: "x" }] }, fields: ["conditions[0].op"], message: "= does not apply to tags" },
  {
    body: { conditions: [{ field: "sequence", op: "CONTAINS", value: "1" }] },
    fields: ["conditions[0].op"],
    message: "CONTAINS does not apply to sequence",
  },
  { body: { conditions: [{ field: "version", op: ">", value: "latest" }] }, fields: ["conditions[0].value"], message: "SemVer" },
  { body: { conditions: [{ field: "publishedAt", op: ">=", value: 2026 }] }, fields: ["conditions[0].value"], message: "a date" },
  { body: { conditions: [{ field: "name", op: "=" }] }, fields: ["conditions[0].value"], message: "must be a string, number or boolean" },
  { body: { conditions: [{ field: "name", op: "IN", value: [] }] }, fields: ["conditions[0].value"], message: "IN takes 1-100 values" },
  { body: { conditions: [{ field: "data.a;drop", op: "=", value: "x" }] }, fields: ["conditions[0].field"], message: "unknown field" },
  {
    body: { limit: -1, conditions: [{ field: "nope", op: "=", value: "x" }] },
    fields: ["limit", "conditions[0].field"],
    message: "must not be negative",
  },
  {
    body: { conditions: Array.from({ length: 65 }, () => ({ field: "name", op: "=", value: "x" })) },
    fields: ["conditions"],
    message: "at most 64 conditions",
  },
];

describe("structured discover errors name the condition", () => {
  for (const error of STRUCTURED_ERRORS) {
    it(error.message, async () => {
      const result = await rest.discover(error.body);
      expect(result.httpStatus).toBe(400);
      expect(result.code).toBe("invalid_argument");
      expect(result.fields).toEqual(error.fields);
      expect(result.message).toContain(error.message);
    });
  }
});

describe("on every protocol", () => {
  for (const protocol of PROTOCOLS) {
    it(`${protocol}: discover, query and their errors`, async () => {
      const client = registryClient(protocol, registry.url);
      try {
        const found = await client.discover({ conditions: [{ field: "tags", op: "CONTAINS", value: "pdf" }], limit: 1 });
        expect(found.code, found.message).toBe("ok");
        const pdf = seeded.all.filter((e) => active(e) && e.tags.includes("pdf"));
        expect(found.body.entries.map((e: EntryJson) => e.entryDid)).toEqual([pdf[0]!.entryDid]);
        expect(found.body.total).toBe(pdf.length);
        expect(typeof found.body.nextCursor).toBe("string");
        const next = await client.discover({
          conditions: [{ field: "tags", op: "CONTAINS", value: "pdf" }],
          limit: 1,
          cursor: found.body.nextCursor,
        });
        expect(next.body.entries.map((e: EntryJson) => e.entryDid)).toEqual([pdf[1]!.entryDid]);

        const queried = await client.query({ query: "SELECT name, version FROM entries WHERE name = 'translator'" });
        expect(queried.code, queried.message).toBe("ok");
        expect(queried.body.entries).toEqual([{ name: "translator", version: "1.0.0" }]);

        const bad = await client.query({ query: "SELECT * FROM entries WHERE" });
        expect(bad.code).toBe("invalid_argument");
        expect(bad.fields).toEqual(["query"]);
        const badCondition = await client.discover({ conditions: [{ field: "tags", op: ">", value: "x" }] });
        expect(badCondition.code).toBe("invalid_argument");
        expect(badCondition.fields).toEqual(["conditions[0].op"]);
      } finally {
        client.close();
      }
    });
  }
});

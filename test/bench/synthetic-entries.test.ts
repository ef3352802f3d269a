import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { loadEntries, type LoadReport } from "../../bench/synthetic-entries.js";
import { parseVersion } from "../../src/domain/semver-order.js";

/**
 * The benchmark's generated registry follows the registry's own rules, so discovery figures at a
 * million entries describe data the service could have stored itself.
 */

const COUNT = 20_000;
let db: TestDatabase;
let report: LoadReport;

beforeAll(async () => {
  db = await createTestDatabase();
  report = await loadEntries(db.database.knex, { count: COUNT, seed: 7 });
}, 120_000);
afterAll(async () => {
  await db?.drop();
});

/** The latest rule's groups (docs/lifecycle.md): active or deprecated, then yanked, then revoked. */
const rank = (status: string) => ({ active: 0, deprecated: 0, yanked: 1 })[status] ?? 3;

const query = async <T>(sql: string): Promise<T[]> => (await db.database.knex.raw(sql)).rows as T[];

describe("the synthetic registry", () => {
  it("has exactly the entries asked for, with names and indexes", async () => {
    expect(report.count).toBe(COUNT);
    expect(report.names).toBeGreaterThan(COUNT / 6);
    expect(report.names).toBeLessThan(COUNT / 2);
    const [indexes] = await query<{ n: number }>("select count(*)::int as n from pg_indexes where tablename = 'entries'");
    expect(indexes!.n).toBeGreaterThanOrEqual(12);
  });

  it("stores every version with the registry's own version key", async () => {
    const rows = await query<{ version: string; version_key: string; is_prerelease: boolean }>(
      "select version, version_key, is_prerelease from entries order by sequence limit 3000",
    );
    for (const row of rows) {
      const parsed = parseVersion(row.version);
      expect("error" in parsed, row.version).toBe(false);
      expect(row.version_key, row.version).toBe((parsed as { sortKey: string }).sortKey);
      expect(row.is_prerelease).toBe((parsed as { isPrerelease: boolean }).isPrerelease);
    }
    expect(rows.some((row) => row.is_prerelease)).toBe(true);
  });

  it("has one latest per name, the one the registry's rule picks", async () => {
    const [{ names, latest }] = (await query<{ names: number; latest: number }>(
      "select count(distinct base_did)::int as names, count(*) filter (where is_latest)::int as latest from entries",
    )) as [{ names: number; latest: number }];
    expect(latest).toBe(names);
    const rows = await query<{ base_did: string; version_key: string; is_prerelease: boolean; status: string; is_latest: boolean }>(
      "select base_did, version_key, is_prerelease, status, is_latest from entries where base_did in (select base_did from entry_names order by base_did limit 500)",
    );
    const byName = new Map<string, typeof rows>();
    for (const row of rows) byName.set(row.base_did, [...(byName.get(row.base_did) ?? []), row]);
    for (const versions of byName.values()) {
      const best = [...versions].sort(
        (a, b) =>
          rank(a.status) - rank(b.status) ||
          Number(a.is_prerelease) - Number(b.is_prerelease) ||
          (a.version_key < b.version_key ? 1 : a.version_key > b.version_key ? -1 : 0),
      )[0]!;
      expect(versions.filter((v) => v.is_latest)).toEqual([best]);
    }
  });

  it("orders sequences by publish time, owns names consistently, and keeps DIDs whole", async () => {
    const [check] = await query<Record<string, number>>(`
      select
        count(*) filter (where entry_did <> base_did || '@' || version)::int as bad_dids,
        count(*) filter (where status = 'revoked' and (revoked_at is null or revocation_reason is null))::int as bad_revocations,
        (select count(*)::int from (select sequence, published_at, lag(published_at) over (order by sequence) as previous from entries) s where previous > published_at) as out_of_order,
        (select count(*)::int from entries e join entry_names n using (base_did) where n.publisher_did <> e.publisher_did or n.entry_type <> e.entry_type) as bad_owners,
        (select count(*)::int from entries e where not exists (select 1 from entry_names n where n.base_did = e.base_did)) as orphans
      from entries`);
    expect(check).toEqual({ bad_dids: 0, bad_revocations: 0, out_of_order: 0, bad_owners: 0, orphans: 0 });
  });

  it("has the skew the benchmark's queries rely on", async () => {
    const [shares] = await query<Record<string, number>>(`
      select
        avg((tags @> array['search'])::int)::float8 as search,
        avg((status = 'revoked')::int)::float8 as revoked,
        avg((status = 'deprecated' and deprecation is not null and deprecated)::int)::float8 as deprecated,
        avg((status = 'yanked' and yank is not null)::int)::float8 as yanked,
        avg((entry_type = 'skill')::int)::float8 as skills,
        avg((description ilike '%weather%')::int)::float8 as weather
      from entries`);
    expect(shares!.search).toBeGreaterThan(0.03);
    expect(shares!.search).toBeLessThan(0.12);
    expect(shares!.revoked).toBeGreaterThan(0.01);
    expect(shares!.revoked).toBeLessThan(0.04);
    expect(shares!.deprecated).toBeGreaterThan(0.02);
    expect(shares!.deprecated).toBeLessThan(0.04);
    expect(shares!.yanked).toBeGreaterThan(0.005);
    expect(shares!.yanked).toBeLessThan(0.02);
    expect(shares!.skills).toBeGreaterThan(0.6);
    expect(shares!.weather).toBeGreaterThan(0.01);
  });

  it("leaves the sequence ready for creates through the API", async () => {
    const [row] = await query<{ next: string; max: string }>(
      "select nextval('entry_sequence')::text as next, (select max(sequence) from entries)::text as max",
    );
    expect(BigInt(row!.next)).toBeGreaterThan(BigInt(row!.max));
  });
});

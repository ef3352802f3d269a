/**
 * A million realistic entries for the discovery benchmark, made inside the database in a few
 * statements (generate_series and hashing, no round trip per row), so loading takes about a
 * minute instead of an hour of signed creates. Rows follow the registry's own rules: SemVer
 * versions with the same byte-ordered version_key (src/domain/semver-order.ts), one latest per
 * name chosen as the registry chooses it, sequences increasing with publish time. Signatures are
 * placeholders: these rows are for reads.
 *
 * Deterministic for a seed: every random choice is a hash of the row and the seed.
 */
import type { Knex } from "knex";
import { percentileOfSorted, round } from "./stats.js";

export interface LoadOptions {
  readonly count: number;
  readonly seed?: number;
}

export interface LoadReport {
  readonly count: number;
  readonly names: number;
  readonly seconds: number;
  /** entries with its indexes, in MB. */
  readonly tableMb: number;
}

const WORDS = [
  "web",
  "search",
  "text",
  "image",
  "audio",
  "video",
  "code",
  "data",
  "file",
  "mail",
  "chat",
  "calendar",
  "weather",
  "map",
  "pdf",
  "sheet",
  "doc",
  "slide",
  "note",
  "task",
  "crm",
  "sql",
  "graph",
  "vector",
  "cloud",
  "git",
  "shell",
  "http",
  "json",
  "xml",
  "csv",
  "zip",
  "crypto",
  "price",
  "news",
  "stock",
  "travel",
  "food",
  "health",
  "music",
];
/**
 * What a name says its entry does, as names in a registry of skills do. Picked with a skew, the
 * first words far more often than the last, so search has common and rare name words.
 */
export const NAME_ROLES = [
  "summarizer",
  "assistant",
  "search",
  "converter",
  "scraper",
  "monitor",
  "translator",
  "extractor",
  "generator",
  "analyzer",
  "scheduler",
  "indexer",
  "parser",
  "validator",
  "notifier",
  "tracker",
  "planner",
  "reporter",
  "checker",
  "formatter",
  "crawler",
  "classifier",
  "detector",
  "optimizer",
  "resolver",
  "exporter",
  "importer",
  "archiver",
  "builder",
  "cleaner",
  "compressor",
  "deployer",
  "encoder",
  "fetcher",
  "finder",
  "inspector",
  "labeler",
  "logger",
  "mapper",
  "merger",
  "migrator",
  "profiler",
  "reader",
  "recorder",
  "renderer",
  "router",
  "sampler",
  "scanner",
  "signer",
  "splitter",
  "tagger",
  "tester",
  "tokenizer",
  "uploader",
  "viewer",
  "watcher",
  "writer",
  "transcriber",
];
/** 200 tags: the words, and four variants of each, so a few are common and most are rare. */
const TAGS = WORDS.flatMap((word) => [word, `${word}-tools`, `${word}.ai`, `${word}-api`, `${word}_v2`]);
const SUBJECTS = [
  "Fetches",
  "Summarises",
  "Translates",
  "Indexes",
  "Converts",
  "Searches",
  "Monitors",
  "Extracts",
  "Schedules",
  "Answers questions about",
];
const OBJECTS = [...WORDS.map((word) => `${word} content`), "weather forecasts", "PDF documents"];
const LICENSES = ["MIT", "Apache-2.0", "BSD-3-Clause", "GPL-3.0", "MPL-2.0"];

/** Average versions per name of the skew in NAMES_SQL: 0.45·1 + 0.25·2 + 0.15·4 + 0.10·8 + 0.04·12 + 0.01·20. */
const VERSIONS_PER_NAME = 3.03;

/**
 * The generator's own constants as an SQL array literal. Only the bench's fixed word lists come
 * here (never outside input); the pattern keeps even those from breaking out of the literal.
 */
function sqlArray(items: readonly string[]): string {
  for (const item of items) if (!/^[A-Za-z0-9 ._-]+$/.test(item)) throw new Error(`not a plain word: ${item}`);
  return `array[${items.map((item) => `'${item}'`).join(", ")}]::text[]`;
}

const FUNCTIONS_SQL = `
  create function pg_temp.u(i bigint, salt bigint) returns float8 language sql immutable as
    $$ select (hashint8extended(i, salt) & 4503599627370495)::float8 / 4503599627370496 $$;
  create function pg_temp.enc(n int) returns text language sql immutable as
    $$ select lpad(length(n::text)::text, 2, '0') || n::text $$;
  create function pg_temp.pick(items text[], r float8) returns text language sql immutable as
    $$ select items[1 + floor(r * array_length(items, 1))::int] $$;
`;

/** One row per name: its type, owner, when it first appeared, and how many versions it has. */
const namesSql = (seed: number, names: number) => `
  create temporary table gen_names on commit drop as
  select j,
    case when pg_temp.u(j, ${seed} + 1) < 0.7 then 'skill' else 'agent' end as entry_type,
    pg_temp.pick(${sqlArray(WORDS)}, pg_temp.u(j, ${seed} + 2)) || '-' || pg_temp.pick(${sqlArray(NAME_ROLES)}, power(pg_temp.u(j, ${seed} + 3), 2)) || '-' || j as name,
    1 + floor(pg_temp.u(j, ${seed} + 4) * 5000)::int as publisher,
    pg_temp.u(j, ${seed} + 5) * 0.9 as born,
    floor(pg_temp.u(j, ${seed} + 6) * 3)::int as base_major,
    (select case when r < 0.45 then 1 when r < 0.70 then 2 when r < 0.85 then 4 when r < 0.95 then 8 when r < 0.99 then 12 else 20 end
       from (select pg_temp.u(j, ${seed} + 7) as r) s) as versions
  from generate_series(1, ${names}) j`;

/** Every version of every name, cut to the count asked for. */
const versionsSql = (seed: number, count: number) => `
  create temporary table gen_versions on commit drop as
  select n.j, k, n.j::bigint * 100 + k as i, n.entry_type, n.name, n.versions,
    'did:reg:main:' || n.entry_type || ':' || n.name as base_did,
    'did:key:z6Mk' || substr(translate(md5('p' || n.publisher) || md5('q' || n.publisher), '0l', 'xy'), 1, 44) as publisher_did,
    n.base_major + (k - 1) / 4 as major,
    ((k - 1) % 4) * 2 + floor(pg_temp.u(n.j * 100 + k, ${seed} + 10) * 2)::int as minor,
    floor(pg_temp.u(n.j * 100 + k, ${seed} + 11) * 20)::int as patch,
    case when pg_temp.u(n.j * 100 + k, ${seed} + 12) < 0.08 then floor(pg_temp.u(n.j * 100 + k, ${seed} + 13) * 3)::int end as pre_kind,
    1 + floor(pg_temp.u(n.j * 100 + k, ${seed} + 14) * 5)::int as pre_number,
    n.born + (1 - n.born) * ((k - 1) + pg_temp.u(n.j * 100 + k, ${seed} + 15)) / n.versions as published
  from gen_names n, generate_series(1, n.versions) k
  order by n.j, k
  limit ${count}`;

const insertEntriesSql = (seed: number) => `
  insert into entries (
    sequence, base_did, entry_did, entry_type, name, version, version_key, is_prerelease, publisher_did,
    published_at, description, tags, data, content_hash, bond_amount, bond_value, bond_unit, signature,
    status, revoked_at, revocation_reason, deprecation, yank, is_latest
  )
  select
    row_number() over (order by published_at, i),
    base_did, base_did || '@' || version, entry_type, name, version, version_key, pre_kind is not null,
    publisher_did, published_at, description, tags, data, content_hash, bond_amount, bond_value, bond_unit,
    signature, status,
    case when status = 'revoked' then published_at + interval '7 days' end,
    case when status = 'revoked' then 'superseded' end,
    case when status = 'deprecated' then jsonb_build_object('reason', 'unmaintained', 'replacement', '',
      'at', to_char((published_at + interval '30 days') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'by', publisher_did) end,
    case when status = 'yanked' then jsonb_build_object('reason', 'broken build',
      'at', to_char((published_at + interval '1 day') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'by', publisher_did) end,
    -- The registry's latest rule (migration 0018): active or deprecated, then yanked, then revoked.
    row_number() over (
      partition by base_did
      order by case status when 'active' then 0 when 'deprecated' then 0 when 'yanked' then 1 else 3 end,
        pre_kind is null desc, version_key collate "C" desc
    ) = 1
  from (
    select v.*,
      major || '.' || minor || '.' || patch ||
        case pre_kind when 0 then '-alpha' when 1 then '-beta.' || pre_number when 2 then '-rc.' || pre_number else '' end as version,
      pg_temp.enc(major) || pg_temp.enc(minor) || pg_temp.enc(patch) ||
        case pre_kind when 0 then '-balpha!' when 1 then '-bbeta!a' || pg_temp.enc(pre_number) || '!'
          when 2 then '-brc!a' || pg_temp.enc(pre_number) || '!' else '~' end as version_key,
      date_trunc('milliseconds', now() - interval '3 years' + published * interval '3 years') as published_at,
      pg_temp.pick(${sqlArray(SUBJECTS)}, pg_temp.u(i, ${seed} + 20)) || ' ' || pg_temp.pick(${sqlArray(OBJECTS)}, pg_temp.u(i, ${seed} + 21)) ||
        ' for ' || pg_temp.pick(${sqlArray(WORDS)}, pg_temp.u(i, ${seed} + 22)) || ' teams.' as description,
      array(select distinct t from unnest(array[
        case when pg_temp.u(i, ${seed} + 30) < 0.05 then 'search' end,
        case when pg_temp.u(i, ${seed} + 31) < 0.08 then 'web' end,
        case when pg_temp.u(i, ${seed} + 32) < 0.02 then 'pdf' end,
        case when pg_temp.u(i, ${seed} + 33) < 0.015 then 'weather' end,
        case when pg_temp.u(i, ${seed} + 34) < 0.7 then pg_temp.pick(${sqlArray(TAGS)}, power(pg_temp.u(i, ${seed} + 35), 2.5)) end,
        case when pg_temp.u(i, ${seed} + 36) < 0.5 then pg_temp.pick(${sqlArray(TAGS)}, power(pg_temp.u(i, ${seed} + 37), 2.5)) end,
        case when pg_temp.u(i, ${seed} + 38) < 0.3 then pg_temp.pick(${sqlArray(TAGS)}, power(pg_temp.u(i, ${seed} + 39), 2.5)) end
      ]) t where t is not null order by t) as tags,
      jsonb_build_object(
        'license', pg_temp.pick(${sqlArray(LICENSES)}, pg_temp.u(i, ${seed} + 40)),
        'runtime', jsonb_build_object('os', pg_temp.pick(array['linux', 'macos', 'any'], pg_temp.u(i, ${seed} + 41)), 'memoryMb', 128 * (1 + floor(pg_temp.u(i, ${seed} + 42) * 16)::int)),
        'homepage', 'https://example.com/' || name
      ) as data,
      'sha256:' || md5('c' || i) || md5('d' || i) as content_hash,
      bond.amount as bond_amount,
      case when bond.amount = '' then null else split_part(bond.amount, ' ', 1)::numeric end as bond_value,
      nullif(split_part(bond.amount, ' ', 2), '') as bond_unit,
      'ed25519:' || substr(md5('s' || i) || md5('t' || i) || md5('u' || i), 1, 86) as signature,
      -- 2% revoked, 3% deprecated, 1% yanked: discovery's default (active and deprecated) skips some.
      case when pg_temp.u(i, ${seed} + 50) < 0.02 then 'revoked' when pg_temp.u(i, ${seed} + 50) < 0.05 then 'deprecated'
        when pg_temp.u(i, ${seed} + 50) < 0.06 then 'yanked' else 'active' end as status
    from gen_versions v,
      lateral (select case
        when pg_temp.u(v.i, ${seed} + 43) < 0.6 then ''
        when pg_temp.u(v.i, ${seed} + 44) < 0.7 then (1 + floor(pg_temp.u(v.i, ${seed} + 45) * 1000)::int) || ' USDC'
        else round(pg_temp.u(v.i, ${seed} + 46)::numeric * 10, 1) || ' ETH' end as amount) bond
  ) rows`;

/** Names first: entries reference them. */
const INSERT_NAMES_SQL = `
  insert into entry_names (base_did, entry_type, name, publisher_did)
  select distinct on (base_did) base_did, entry_type, name, publisher_did from gen_versions order by base_did`;

/** Fills the migrated, empty `entries` and `entry_names` tables with `count` entries. */
export async function loadEntries(knex: Knex, options: LoadOptions): Promise<LoadReport> {
  const started = performance.now();
  const seed = Math.trunc(options.seed ?? 1) * 1000;
  const names = Math.ceil(options.count / VERSIONS_PER_NAME) + 1000;
  await knex.transaction(async (tx) => {
    await tx.raw("set local maintenance_work_mem = '512MB'");
    const indexes = await withoutSecondaryIndexes(tx);
    await tx.raw(FUNCTIONS_SQL);
    await tx.raw(namesSql(seed, names));
    await tx.raw(versionsSql(seed, Math.trunc(options.count)));
    await tx.raw(INSERT_NAMES_SQL);
    await tx.raw(insertEntriesSql(seed));
    await tx.raw("select setval('entry_sequence', (select coalesce(max(sequence), 0) + 1 from entries), false)");
    for (const definition of indexes) await tx.raw(definition);
  });
  await knex.raw("analyze entries, entry_names, entry_search");
  const [counts] = (
    await knex.raw(
      "select (select count(*) from entries)::int as count, (select count(*) from entry_names)::int as names, pg_total_relation_size('entries')::float8 / 1048576 as mb",
    )
  ).rows;
  return { count: counts.count, names: counts.names, seconds: round((performance.now() - started) / 1000, 1), tableMb: round(counts.mb) };
}

/**
 * Drops the secondary indexes of `entries` and of `entry_search` (which a trigger fills as rows
 * arrive) and returns their definitions, so they are built once over the loaded rows (much faster
 * than maintaining them row by row). Indexes behind constraints (primary key, unique) stay.
 */
async function withoutSecondaryIndexes(tx: Knex.Transaction): Promise<string[]> {
  const { rows } = await tx.raw<{ rows: { name: string; definition: string }[] }>(`
    select i.indexname as name, i.indexdef as definition
    from pg_indexes i
    where i.tablename in ('entries', 'entry_search') and i.schemaname = current_schema()
      and not exists (select 1 from pg_constraint c where c.conname = i.indexname)`);
  for (const { name } of rows) await tx.raw("drop index ??", [name]);
  return rows.map((row) => row.definition);
}

export interface LatencyOptions {
  readonly samples: number;
  readonly warmup: number;
}

/** Latency of `send`, called one at a time: first `warmup` calls unmeasured, then `samples` measured. */
export async function measureLatency(
  send: () => Promise<unknown>,
  options: LatencyOptions,
): Promise<{ p50Ms: number; p95Ms: number; samples: number }> {
  for (let i = 0; i < options.warmup; i++) await send();
  const times = new Float64Array(options.samples);
  for (let i = 0; i < options.samples; i++) {
    const started = performance.now();
    await send();
    times[i] = performance.now() - started;
  }
  times.sort();
  return { p50Ms: round(percentileOfSorted(times, 50), 2), p95Ms: round(percentileOfSorted(times, 95), 2), samples: options.samples };
}

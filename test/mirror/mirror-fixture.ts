import type { Knex } from "knex";
import { expect } from "vitest";
import { signLifecycle, signModeration, type KeyPair } from "../../src/sdk/signing.js";
import { openDatabase, type Database } from "../../src/storage/database.js";
import { childEnv, runCli, type CliResult } from "../support/child-processes.js";
import type { PublishingSetup } from "../support/registry-fixture.js";
import { createTestDatabase, seededDataDirectory, type TestDatabase } from "../support/test-database.js";

/** What the mirror tests share: a source to write to, a database to mirror into, and the state to compare. */

/** Publishes as the SDK and CLI do, signed as v2 with its fields (release-upgrade.test.ts mirrors v1 records). */
export async function publishVersion(source: PublishingSetup, name: string, version: string): Promise<void> {
  const entry = await source.publisher.entry(name, version, {
    payloadType: "registry.entry.v2",
    homepage: `https://example.com/${name}`,
    license: "Apache-2.0 OR MIT",
  });
  const response = await fetch(`${source.registry.url}/v1/entries`, {
    method: "POST",
    headers: { authorization: `Bearer ${source.token}`, "content-type": "application/json" },
    body: JSON.stringify(entry),
  });
  expect(response.status, await response.text()).toBe(201);
}

export async function revokeVersion(source: PublishingSetup, did: string, reason: string): Promise<void> {
  const revocation = await source.publisher.revocation(did, reason);
  const response = await fetch(`${source.registry.url}/v1/entries/${encodeURIComponent(did)}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${source.token}`, "content-type": "application/json" },
    body: JSON.stringify(revocation),
  });
  expect(response.status, await response.text()).toBe(200);
}

/** Waits until the source has signed a checkpoint of at least `size` records. */
export async function checkpointReaches(sourceUrl: string, size: number): Promise<void> {
  for (let attempt = 0; attempt < 400; attempt++) {
    const body = (await (await fetch(`${sourceUrl}/v1/log/checkpoint`)).json()) as { treeSize?: string };
    if (Number(body.treeSize ?? 0) >= size) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`the source's checkpoint did not reach ${size} records`);
}

export async function logKeyOf(sourceUrl: string): Promise<string> {
  return ((await (await fetch(`${sourceUrl}/v1/log/key`)).json()) as { verifierKey: string }).verifierKey;
}

export interface MirrorDatabase {
  /** The environment that points `registry mirror` (or a served registry) at it. */
  readonly env: Record<string, string>;
  open(): Promise<{ knex: Knex; database: Database; close(): Promise<void> }>;
  remove(): Promise<void>;
}

/** A database for a mirror: a fresh Postgres database, or an embedded one in a directory of its own. */
export async function mirrorDatabase(): Promise<MirrorDatabase> {
  if (process.env.DATABASE_URL) {
    const db: TestDatabase = await createTestDatabase();
    return {
      env: { DATABASE_URL: db.url! },
      open: async () => ({ knex: db.database.knex, database: db.database, close: async () => {} }),
      remove: () => db.drop(),
    };
  }
  // A copy of the run's migrated template when there is one: the mirror process skips initdb.
  const dir = await seededDataDirectory("registry-mirror-");
  return {
    env: { DATABASE_URL: "", REGISTRY_DATA_DIR: dir.path },
    async open() {
      const database: Database = await openDatabase({ dataDir: dir.path });
      return { knex: database.knex, database, close: () => database.close() };
    },
    remove: () => dir.remove(),
  };
}

/** `registry mirror --from <url> ...args` into `mirror`, with no log key from the environment. */
export function runMirrorCli(sourceUrl: string, args: readonly string[], mirror: MirrorDatabase, timeoutMs?: number): Promise<CliResult> {
  return runCli(["mirror", "--from", sourceUrl, ...args], childEnv({ REGISTRY_LOG_KEY: undefined, ...mirror.env }), timeoutMs);
}

const LOG_COLUMNS = [
  "log_index",
  "kind",
  "base_did",
  "entry_state",
  "latest_version",
  "revocation_did",
  "revocation_reason",
  "revocation_signature",
  "revocation_signer",
  "logged_at",
  "record",
  "entry_states",
  "request",
];

/**
 * What must be identical in source and mirror: the log with its record bytes and requests, which
 * versions each record is about, the entries, the names, the tree's head. All but `created_at`,
 * which says when each database stored the row. (`signed_action_clock` is the source's own: it also
 * counts requests that changed nothing, which the log does not show.)
 */
export async function stateOf(knex: Knex) {
  const withoutCreatedAt = ({ created_at: _, ...row }: Record<string, unknown>) => row;
  const log = await knex("registry_log").select(LOG_COLUMNS).orderBy("log_index");
  return {
    log: log.map((row) => ({
      ...row,
      entry_state: row.entry_state === null ? null : withoutCreatedAt(row.entry_state),
      entry_states: row.entry_states === null ? null : row.entry_states.map(withoutCreatedAt),
    })),
    logVersions: await knex("registry_log_versions").select("*").orderBy(["log_index", "entry_did"]),
    entries: (await knex("entries").select("*").orderBy("sequence")).map(withoutCreatedAt),
    names: (await knex("entry_names").select("*").orderBy("base_did")).map(withoutCreatedAt),
    tree: await knex("registry_tree_head").select("size", "root").first(),
  };
}

let lastIssuedAt = 0;
/** Strictly later than the last this process made: the registry accepts nothing older on a name. */
export function issuedAt(): string {
  lastIssuedAt = Math.max(Date.now(), lastIssuedAt + 1);
  return new Date(lastIssuedAt).toISOString();
}

/** A signed lifecycle request by the source's publisher, over REST; the registry must accept it. */
export async function changeLifecycle(
  source: PublishingSetup,
  did: string,
  action: string,
  extra: { reason?: string; replacement?: string } = {},
): Promise<void> {
  const fields = {
    subject: did,
    action,
    reason: extra.reason ?? "",
    replacement: extra.replacement ?? "",
    by: source.publisher.did,
    issuedAt: issuedAt(),
  };
  const signature = await signLifecycle(fields as never, source.publisher.keys.privateKey);
  const { subject: _, by: __, ...body } = fields;
  await expectAccepted(source, `/v1/entries/${encodeURIComponent(did)}/lifecycle`, source.token, { ...body, signature });
}

/** A moderator's signed decision over REST, with a token holding registry.admin. */
export async function moderate(
  source: PublishingSetup,
  moderator: { readonly keys: KeyPair; readonly token: string },
  did: string,
  action: string,
  fields: { policy?: string; note: string },
): Promise<void> {
  const payload = { subject: did, action, policy: fields.policy ?? "", note: fields.note, by: moderator.keys.did, issuedAt: issuedAt() };
  const signature = await signModeration(payload as never, moderator.keys.privateKey);
  const { subject: _, by: __, ...body } = payload;
  await expectAccepted(source, `/v1/entries/${encodeURIComponent(did)}/moderation`, moderator.token, { ...body, signature });
}

async function expectAccepted(source: PublishingSetup, path: string, token: string, body: unknown): Promise<void> {
  const response = await fetch(`${source.registry.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status, await response.text()).toBe(200);
}

import type { Knex } from "knex";
import * as entries from "./0001-entries.js";
import * as auth from "./0002-auth.js";
import * as createEntryFunction from "./0003-create-entry-function.js";
import * as discoveryIndexes from "./0004-discovery-indexes.js";
import * as rateLimitBuckets from "./0005-rate-limit-buckets.js";
import * as registrySecrets from "./0006-registry-secrets.js";
import * as revokedAtIndex from "./0007-revoked-at-index.js";
import * as changeLog from "./0008-change-log.js";
import * as transparencyLog from "./0009-transparency-log.js";
import * as createPlans from "./0010-create-plans.js";
import * as logAppendLock from "./0011-log-append-lock.js";
import * as createInOnePlan from "./0012-create-in-one-plan.js";
import * as logSource from "./0013-log-source.js";
import * as logStateBytes from "./0015-log-state-bytes.js";
import * as entryPayloadV2 from "./0016-entry-payload-v2.js";
import * as logNameIndex from "./0017-log-name-index.js";
import * as versionStates from "./0018-version-states.js";
import * as actionCalls from "./0019-action-calls.js";
import * as search from "./0020-search.js";
import * as searchTiers from "./0021-search-tiers.js";
import * as searchSyncOnChange from "./0022-search-sync-on-change.js";
import * as cachedPlans from "./0023-cached-plans.js";
import * as searchRowOnce from "./0024-search-row-once.js";

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/**
 * Migrations are listed here rather than discovered on disk, so they run the same from sources
 * under tsx, from a build, and from tests, with no file globbing.
 */
const migrations: ReadonlyArray<readonly [string, Migration]> = [
  ["0001-entries", entries],
  ["0002-auth", auth],
  ["0003-create-entry-function", createEntryFunction],
  ["0004-discovery-indexes", discoveryIndexes],
  ["0005-rate-limit-buckets", rateLimitBuckets],
  ["0006-registry-secrets", registrySecrets],
  ["0007-revoked-at-index", revokedAtIndex],
  ["0008-change-log", changeLog],
  ["0009-transparency-log", transparencyLog],
  ["0010-create-plans", createPlans],
  ["0011-log-append-lock", logAppendLock],
  ["0012-create-in-one-plan", createInOnePlan],
  ["0013-log-source", logSource],
  ["0015-log-state-bytes", logStateBytes],
  ["0016-entry-payload-v2", entryPayloadV2],
  ["0017-log-name-index", logNameIndex],
  ["0018-version-states", versionStates],
  ["0019-action-calls", actionCalls],
  ["0020-search", search],
  ["0021-search-tiers", searchTiers],
  ["0022-search-sync-on-change", searchSyncOnChange],
  ["0023-cached-plans", cachedPlans],
  ["0024-search-row-once", searchRowOnce],
];

export const migrationSource: Knex.MigrationSource<readonly [string, Migration]> = {
  async getMigrations() {
    return [...migrations];
  },
  getMigrationName([name]) {
    return name;
  },
  async getMigration([, migration]) {
    return migration;
  },
};

import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * What an old release left behind for the upgrade test: its whole database as plain SQL
 * (`<release>.sql`) and what its server answered (`<release>.json`), both written by
 * make-release-fixture.ts. This file is the format both sides agree on.
 */

export const FIXTURE_DIRECTORY = fileURLToPath(new URL("../fixtures/upgrade/", import.meta.url));

/** A REST answer as JSON. */
export type Json = Record<string, any>;

export interface ReleaseFixture {
  /** The commit of the release that made the database. */
  readonly release: string;
  readonly generatedAt: string;
  /** The log origin the release's server signed with; the upgraded server must keep it. */
  readonly logOrigin: string;
  /** The names in knex's migrations table when the dump was taken, in the order applied. */
  readonly migrations: readonly string[];
  /** GET /v1/log/key */
  readonly logKey: { readonly origin: string; readonly verifierKey: string; readonly publicKey: string };
  /** GET /v1/log/checkpoint, once it covered every record. */
  readonly checkpoint: { readonly checkpoint: string; readonly treeSize: string; readonly rootHash: string };
  /** GET /v1/entries/{did} for every version's DID and every bare DID, by that DID. */
  readonly entries: Readonly<Record<string, Json>>;
  /** GET /v1/entries/{did}/versions for every bare DID. */
  readonly versions: Readonly<Record<string, Json>>;
  /** Every record as GET /v1/log/proofs/inclusion served it: its bytes (base64) and leaf hash (hex). */
  readonly records: ReadonlyArray<{ readonly index: number; readonly record: string; readonly leafHash: string }>;
  /** The level-0 hash tiles and entry bundles (C2SP tlog-tiles) of the checkpoint's tree, base64 by path. */
  readonly tiles: Readonly<Record<string, string>>;
  /** Every record as GET /v1/changes served it. */
  readonly changes: readonly Json[];
}

/** The releases with a fixture, oldest file name first. */
export function fixtureReleases(): string[] {
  return readdirSync(FIXTURE_DIRECTORY)
    .filter((name) => name.endsWith(".json"))
    .map((name) => name.slice(0, -".json".length))
    .sort();
}

export function readReleaseFixture(release: string): { fixture: ReleaseFixture; sql: string } {
  const fixture = JSON.parse(readFileSync(`${FIXTURE_DIRECTORY}${release}.json`, "utf8")) as ReleaseFixture;
  return { fixture, sql: readFileSync(`${FIXTURE_DIRECTORY}${release}.sql`, "utf8") };
}

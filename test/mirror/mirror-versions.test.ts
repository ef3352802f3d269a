import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHttpLogSource } from "../../src/mirror/http-log-source.js";
import { createLogMirror } from "../../src/mirror/log-mirror.js";
import { parseLogKey } from "../../src/sdk/log-verifier.js";
import { migrateToLatest, type Database } from "../../src/storage/database.js";
import { createKnexMirrorStore } from "../../src/storage/knex-mirror-store.js";
import { nodeMerkleHasher } from "../../src/transparency/node-merkle-hasher.js";
import { createTestDatabase } from "../support/test-database.js";
import { startPublishingRegistry, startTestRegistry, type PublishingSetup } from "../support/registry-fixture.js";
import { checkpointReaches, logKeyOf, mirrorDatabase, publishVersion, revokeVersion, runMirrorCli, stateOf } from "./mirror-fixture.js";

/**
 * Entries with several versions, mirrored step by step: each new version, prerelease or older
 * version, and each revocation (the latest's among them, which moves the bare DID back to the
 * previous unrevoked version) reaches the mirror, whose database and answers then agree with the
 * source's on every resolve. A database the source's log did not fill is refused, naming the record.
 */

const NAME = "versions";
const OTHER = "versions-other";
const did = (name: string, version?: string) => `did:reg:main:skill:${name}${version === undefined ? "" : `@${version}`}`;
const VERSIONS = ["1.0.0", "1.1.0", "2.0.0-beta.1", "0.9.0", "1.2.0"];

/** Each step changes the source by one record; the bare DID's latest afterwards, by the source's rule. */
const STEPS: readonly { readonly act: (source: PublishingSetup) => Promise<void>; readonly latest: string }[] = [
  { act: (source) => publishVersion(source, NAME, "1.0.0"), latest: "1.0.0" },
  { act: (source) => publishVersion(source, NAME, "1.1.0"), latest: "1.1.0" },
  { act: (source) => publishVersion(source, NAME, "2.0.0-beta.1"), latest: "1.1.0" },
  { act: (source) => publishVersion(source, NAME, "0.9.0"), latest: "1.1.0" },
  { act: (source) => publishVersion(source, OTHER, "3.0.0"), latest: "1.1.0" },
  // The latest revoked: the bare DID moves back to 1.0.0, then to 0.9.0, then to the prerelease.
  { act: (source) => revokeVersion(source, did(NAME, "1.1.0"), "broken"), latest: "1.0.0" },
  { act: (source) => revokeVersion(source, did(NAME, "1.0.0"), "broken too"), latest: "0.9.0" },
  { act: (source) => publishVersion(source, OTHER, "3.1.0"), latest: "0.9.0" },
  { act: (source) => revokeVersion(source, did(NAME, "0.9.0"), "withdrawn"), latest: "2.0.0-beta.1" },
  { act: (source) => revokeVersion(source, did(NAME, "2.0.0-beta.1"), "withdrawn"), latest: "1.1.0" },
  { act: (source) => publishVersion(source, NAME, "1.2.0"), latest: "1.2.0" },
];

let source: PublishingSetup;
let logKey: string;

beforeAll(async () => {
  source = await startPublishingRegistry(["registry.publish.skill"], { logIntegrateMs: 50, logOrigin: "versions.test/log" });
  logKey = await logKeyOf(source.registry.url);
}, 60_000);
afterAll(async () => {
  await source?.close();
});

/** What resolving each DID of the entries answers: status and body, on the REST routes. */
async function resolves(url: string): Promise<Record<string, unknown>> {
  const dids = [did(NAME), did(OTHER), ...VERSIONS.map((version) => did(NAME, version))];
  const answers = await Promise.all(
    [...dids.map((one) => `/v1/entries/${encodeURIComponent(one)}`), `/v1/entries/${encodeURIComponent(did(NAME))}/versions`].map(
      async (path) => {
        const response = await fetch(`${url}${path}`);
        return [path, { status: response.status, body: await response.json() }] as const;
      },
    ),
  );
  return Object.fromEntries(answers);
}

/** The database and what a registry served on it answers, against the source's. */
async function expectSameAsSource(database: Database, latest: string): Promise<void> {
  expect(await stateOf(database.knex)).toEqual(await stateOf(source.db.database.knex));
  const fromSource = await resolves(source.registry.url);
  expect(fromSource[`/v1/entries/${encodeURIComponent(did(NAME))}`]).toMatchObject({ status: 200, body: { entryDid: did(NAME, latest) } });
  const served = await startTestRegistry(database, { logOrigin: "mirror.test/log" });
  try {
    expect(await resolves(served.url)).toEqual(fromSource);
  } finally {
    await served.close();
  }
}

describe("registry mirror with several versions of an entry", () => {
  it("follows new versions, revocations and the latest moving back, agreeing with the source on every resolve at every step", async () => {
    // The mirror itself, in this process, so that each step is checked without a process start.
    const stepwise = await createTestDatabase();
    const mirror = createLogMirror({
      source: createHttpLogSource(source.registry.url),
      store: createKnexMirrorStore(stepwise.database.knex, logKey),
      logKey: parseLogKey(logKey),
      hasher: nodeMerkleHasher,
    });
    try {
      for (const [index, step] of STEPS.entries()) {
        await step.act(source);
        await checkpointReaches(source.registry.url, index + 1);
        expect(await mirror.catchUp()).toMatchObject({ from: index, to: index + 1 });
        await expectSameAsSource(stepwise.database, step.latest);
      }
    } finally {
      await stepwise.drop();
    }

    // The whole history in one batch, as `registry mirror` takes it into a new database.
    const atOnce = await mirrorDatabase();
    try {
      const result = await runMirrorCli(source.registry.url, ["--log-key", logKey, "--once"], atOnce);
      expect(result.code, result.stderr).toBe(0);
      const opened = await atOnce.open();
      try {
        await expectSameAsSource(opened.database, STEPS.at(-1)!.latest);
      } finally {
        await opened.close();
      }
    } finally {
      await atOnce.remove();
    }
  }, 180_000);

  it("refuses a database holding a version the source's log did not write, naming the record and the version (exit 6)", async () => {
    const mirror = await mirrorDatabase();
    try {
      // The source's first version, copied in by hand under another sequence: a row no log wrote.
      const opened = await mirror.open();
      try {
        await migrateToLatest(opened.database);
        const name = await source.db.database.knex("entry_names").where("base_did", did(NAME)).first();
        const entry = await source.db.database.knex("entries").where("entry_did", did(NAME, "1.0.0")).first();
        await opened.knex("entry_names").insert(name);
        await opened.knex("entries").insert({ ...entry, sequence: "999", data: JSON.stringify(entry.data) });
      } finally {
        await opened.close();
      }
      const result = await runMirrorCli(source.registry.url, ["--log-key", logKey, "--once"], mirror);
      expect(result.code, result.stderr).toBe(6);
      expect(result.stderr).toBe(
        `registry: mirror refused: record 0: ${did(NAME, "1.0.0")} is already in this database outside its log: mirror into a database of its own\n`,
      );
    } finally {
      await mirror.remove();
    }
  }, 60_000);
});

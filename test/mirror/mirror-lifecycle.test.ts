import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKeyPair, type KeyPair } from "../../src/sdk/signing.js";
import type { Database } from "../../src/storage/database.js";
import { startPublishingRegistry, startTestRegistry, type PublishingSetup } from "../support/registry-fixture.js";
import {
  changeLifecycle,
  checkpointReaches,
  logKeyOf,
  mirrorDatabase,
  moderate,
  publishVersion,
  revokeVersion,
  runMirrorCli,
  stateOf,
} from "./mirror-fixture.js";

/**
 * `registry mirror` folds lifecycle and moderation records (docs/lifecycle.md): a source with
 * deprecations, yanks, an archive and its undoing, a quarantine lifted, removals and a revocation
 * is copied in one batch and in batches of three (each folded onto the records already written),
 * and the mirror's tables and answers are then the source's. With `--moderator`, a moderation
 * signed by anyone else is refused, writing nothing.
 */

const TOOL = "did:reg:main:skill:tool";
const OTHER = "did:reg:main:skill:other";
const VERSIONS = ["1.0.0", "1.1.0", "1.2.0", "2.0.0-rc.1"];

let source: PublishingSetup;
let moderator: { keys: KeyPair; token: string };
let logKey: string;
let records: number;

beforeAll(async () => {
  source = await startPublishingRegistry(["registry.publish.skill"], { logIntegrateMs: 50, logOrigin: "lifecycle.test/log" });
  const keys = await generateKeyPair();
  moderator = { keys, token: await source.registry.accessToken(keys.did, ["registry.admin"]) };
  for (const version of ["1.0.0", "1.1.0", "2.0.0-rc.1"]) await publishVersion(source, "tool", version);
  await changeLifecycle(source, `${TOOL}@1.0.0`, "deprecate", { reason: "use 1.1", replacement: `${TOOL}@1.1.0` });
  await changeLifecycle(source, `${TOOL}@1.1.0`, "yank", { reason: "broken build" });
  await publishVersion(source, "other", "1.0.0");
  await changeLifecycle(source, TOOL, "archive", { reason: "moved" });
  await changeLifecycle(source, TOOL, "unarchive");
  await publishVersion(source, "tool", "1.2.0");
  await moderate(source, moderator, `${TOOL}@1.2.0`, "quarantine", { policy: "malware", note: "reported" });
  await changeLifecycle(source, `${TOOL}@1.1.0`, "unyank");
  await changeLifecycle(source, TOOL, "deprecate", { reason: "end of life" });
  await moderate(source, moderator, `${TOOL}@1.0.0`, "remove", { policy: "malware", note: "steals keys" });
  await revokeVersion(source, `${TOOL}@2.0.0-rc.1`, "withdrawn");
  await changeLifecycle(source, TOOL, "yank", { reason: "all broken" });
  await moderate(source, moderator, `${TOOL}@1.2.0`, "unquarantine", { note: "cleared" });
  await moderate(source, moderator, OTHER, "remove", { policy: "spam", note: "spam" });
  logKey = await logKeyOf(source.registry.url);
  records = Number((await source.db.database.knex("registry_log").count({ n: "*" }).first())!.n);
  await checkpointReaches(source.registry.url, records);
}, 120_000);
afterAll(async () => {
  await source?.close();
});

/** What resolving each DID and listing the versions answers, on the REST routes. */
async function reads(url: string): Promise<Record<string, unknown>> {
  const dids = [TOOL, OTHER, `${OTHER}@1.0.0`, ...VERSIONS.map((version) => `${TOOL}@${version}`)];
  const paths = [...dids.map((did) => `/v1/entries/${encodeURIComponent(did)}`), `/v1/entries/${encodeURIComponent(TOOL)}/versions`];
  const answers = await Promise.all(
    paths.map(async (path) => {
      const response = await fetch(`${url}${path}`);
      return [path, { status: response.status, body: await response.json() }] as const;
    }),
  );
  return Object.fromEntries(answers);
}

async function expectSameAsSource(database: Database): Promise<void> {
  expect(await stateOf(database.knex)).toEqual(await stateOf(source.db.database.knex));
  const served = await startTestRegistry(database, { logOrigin: "mirror.test/log" });
  try {
    expect(await reads(served.url)).toEqual(await reads(source.registry.url));
  } finally {
    await served.close();
  }
}

describe("registry mirror of lifecycle and moderation", () => {
  it("folds every record and ends with the source's tables and reads, in one batch or several", async () => {
    // The source did all it was asked: the states the mirror must reach.
    const fromSource = await reads(source.registry.url);
    expect(fromSource[`/v1/entries/${encodeURIComponent(`${TOOL}@1.0.0`)}`]).toMatchObject({
      status: 200,
      body: { status: "removed", description: "", removal: { policy: "malware", note: "steals keys" } },
    });
    expect(fromSource[`/v1/entries/${encodeURIComponent(TOOL)}`]).toMatchObject({ body: { version: "1.2.0", status: "yanked" } });
    expect(fromSource[`/v1/entries/${encodeURIComponent(OTHER)}`]).toMatchObject({ status: 404 });

    for (const batch of [[], ["--batch", "3"]]) {
      const mirror = await mirrorDatabase();
      try {
        const result = await runMirrorCli(source.registry.url, ["--log-key", logKey, "--once", ...batch], mirror);
        expect(result.code, result.stderr).toBe(0);
        const opened = await mirror.open();
        try {
          await expectSameAsSource(opened.database);
        } finally {
          await opened.close();
        }
      } finally {
        await mirror.remove();
      }
    }
  }, 120_000);

  it("with --moderator, refuses a moderation signed by anyone else (exit 6), writing nothing, and accepts its signer's", async () => {
    const mirror = await mirrorDatabase();
    try {
      const stranger = (await generateKeyPair()).did;
      const refused = await runMirrorCli(source.registry.url, ["--log-key", logKey, "--once", "--moderator", stranger], mirror);
      expect(refused.code, refused.stderr).toBe(6);
      expect(refused.stderr).toMatch(
        new RegExp(
          `^registry: mirror refused: record \\d+ \\(entry\\.moderation\\): not-a-moderator: ${moderator.keys.did} is not a moderator\\n$`,
        ),
      );
      let opened = await mirror.open();
      expect((await stateOf(opened.knex)).log).toEqual([]);
      await opened.close();

      const accepted = await runMirrorCli(
        source.registry.url,
        ["--log-key", logKey, "--once", "--moderator", stranger, "--moderator", moderator.keys.did],
        mirror,
      );
      expect(accepted.code, accepted.stderr).toBe(0);
      opened = await mirror.open();
      expect(await stateOf(opened.knex)).toEqual(await stateOf(source.db.database.knex));
      await opened.close();
    } finally {
      await mirror.remove();
    }
  }, 120_000);
});

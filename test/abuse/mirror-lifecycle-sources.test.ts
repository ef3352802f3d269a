import { afterEach, describe, expect, it } from "vitest";
import { generateKeyPair, signLifecycle, type KeyPair } from "../../src/sdk/signing.js";
import {
  changeLifecycle,
  checkpointReaches,
  issuedAt,
  logKeyOf,
  mirrorDatabase,
  publishVersion,
  runMirrorCli,
  stateOf,
} from "../mirror/mirror-fixture.js";
import { startPublishingRegistry, type PublishingSetup } from "../support/registry-fixture.js";

/**
 * Sources whose signed log holds a lifecycle record the rules refuse: records written straight
 * into a real source's database, which its log then integrates and signs as its own. Each request
 * carries a valid signature; what is wrong is who signed it, when, or the state the record states.
 * The mirror refuses the whole batch (exit 6) and writes nothing of it.
 */

const NAME = "did:reg:main:skill:hostile-tool";
let source: PublishingSetup | undefined;

afterEach(async () => {
  await source?.close();
  source = undefined;
});

async function startSource(): Promise<PublishingSetup> {
  source = await startPublishingRegistry(["registry.publish.skill"], { logIntegrateMs: 50, logOrigin: "forged.test/log" });
  await publishVersion(source, "hostile-tool", "1.0.0");
  return source;
}

/**
 * Logs a lifecycle request the registry never accepted: signed by `signer`, about `did`, stating
 * each version it names in its state now with `overrides` (SQL's to_jsonb, as the registry writes it).
 */
async function forgeLifecycle(
  setup: PublishingSetup,
  signer: KeyPair,
  did: string,
  action: string,
  overrides: Record<string, unknown>,
  at = issuedAt(),
): Promise<void> {
  const fields = {
    payloadType: "registry.lifecycle.v1",
    subject: did,
    action,
    reason: "forged",
    replacement: "",
    by: signer.did,
    issuedAt: at,
  };
  const request = { ...fields, signature: await signLifecycle(fields as never, signer.privateKey) };
  await setup.db.database.knex.raw(
    `insert into registry_log (log_index, kind, base_did, entry_states, request, latest_version)
     select (select max(log_index) + 1 from registry_log), 'entry.lifecycle', ?,
            (select jsonb_agg(to_jsonb(e) || ?::jsonb) from entries e where e.entry_did = ?), ?::jsonb, '1.0.0'`,
    [NAME, JSON.stringify(overrides), `${NAME}@1.0.0`, JSON.stringify(request)],
  );
}

async function expectRefused(setup: PublishingSetup, message: RegExp): Promise<void> {
  const size = Number((await setup.db.database.knex("registry_log").count({ n: "*" }).first())!.n);
  await checkpointReaches(setup.registry.url, size);
  const mirror = await mirrorDatabase();
  try {
    const result = await runMirrorCli(setup.registry.url, ["--log-key", await logKeyOf(setup.registry.url), "--once"], mirror);
    expect(result.code, result.stderr).toBe(6);
    expect(result.stderr).toMatch(message);
    const opened = await mirror.open();
    try {
      expect((await stateOf(opened.knex)).log).toEqual([]);
    } finally {
      await opened.close();
    }
  } finally {
    await mirror.remove();
  }
}

const mark = (by: string) => ({ reason: "forged", at: new Date().toISOString(), by });

describe("registry mirror against sources whose lifecycle records break the rules", () => {
  it("refuses a deprecation whose record says the version was yanked", async () => {
    const setup = await startSource();
    const by = setup.publisher.did;
    await forgeLifecycle(setup, setup.publisher.keys, `${NAME}@1.0.0`, "deprecate", { status: "yanked", yank: mark(by) });
    await expectRefused(
      setup,
      /^registry: mirror refused: record 1 \(entry\.lifecycle\): it says did:reg:main:skill:hostile-tool@1\.0\.0 has status "yanked", but the rules give "deprecated"\n$/,
    );
  }, 60_000);

  it("refuses a yank signed, validly, by a key that does not control the name", async () => {
    const setup = await startSource();
    const stranger = await generateKeyPair();
    await forgeLifecycle(setup, stranger, `${NAME}@1.0.0`, "yank", { status: "yanked", yank: mark(stranger.did) });
    await expectRefused(
      setup,
      new RegExp(
        `^registry: mirror refused: record 1 \\(entry\\.lifecycle\\): not-a-controller: ${stranger.did} is not a controller of ${NAME}\\n$`,
      ),
    );
  }, 60_000);

  it("refuses a replayed request: a yank logged again after its undo, with its old issuedAt", async () => {
    const setup = await startSource();
    await changeLifecycle(setup, `${NAME}@1.0.0`, "yank", { reason: "forged" });
    const yanked = await setup.db.database.knex("registry_log").where("kind", "entry.lifecycle").first("request");
    await changeLifecycle(setup, `${NAME}@1.0.0`, "unyank");
    const by = setup.publisher.did;
    await forgeLifecycle(
      setup,
      setup.publisher.keys,
      `${NAME}@1.0.0`,
      "yank",
      { status: "yanked", yank: mark(by) },
      yanked.request.issuedAt,
    );
    await expectRefused(setup, /^registry: mirror refused: record 3 \(entry\.lifecycle\): stale-issued-at: issuedAt .* is not later than /);
  }, 60_000);

  it("refuses a record that names another latest than the rules give", async () => {
    const setup = await startSource();
    await publishVersion(setup, "hostile-tool", "1.1.0");
    // Yanking 1.0.0 leaves 1.1.0 latest; the forged record says 1.0.0.
    await forgeLifecycle(setup, setup.publisher.keys, `${NAME}@1.0.0`, "yank", { status: "yanked", yank: mark(setup.publisher.did) });
    await expectRefused(
      setup,
      /^registry: mirror refused: record 2 \(entry\.lifecycle\): it says latest is "1\.0\.0", but the rules give "1\.1\.0"\n$/,
    );
  }, 60_000);
});

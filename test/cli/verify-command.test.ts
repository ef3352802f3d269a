import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRegistryClient } from "../../src/sdk/index.js";
import { LogVerificationError } from "../../src/sdk/log-verifier.js";
import { generateKeyPair } from "../../src/sdk/signing.js";
import { changeLifecycle, checkpointReaches, moderate } from "../mirror/mirror-fixture.js";
import { childEnv, runCli } from "../support/child-processes.js";
import { startPublishingRegistry, type PublishingSetup } from "../support/registry-fixture.js";

/**
 * `registry verify` and the SDK's proveEntry against a running registry: an entry's state proved
 * from the transparency log, with the log key pinned or taken from the server, and the exit code
 * of a proof that does not verify.
 */

let setup: PublishingSetup;
let published: any;
let logKey: string;

beforeAll(async () => {
  setup = await startPublishingRegistry(["registry.publish.skill"], { logIntegrateMs: 50, logOrigin: "registry.test/log" });
  const entry = await setup.publisher.entry("verify-me", "1.0.0");
  const response = await fetch(`${setup.registry.url}/v1/entries`, {
    method: "POST",
    headers: { authorization: `Bearer ${setup.token}`, "content-type": "application/json" },
    body: JSON.stringify(entry),
  });
  published = await response.json();
  logKey = ((await (await fetch(`${setup.registry.url}/v1/log/key`)).json()) as any).verifierKey;
  // Wait for the checkpoint that holds the entry.
  for (let attempt = 0; attempt < 200; attempt++) {
    const checkpoint = await fetch(`${setup.registry.url}/v1/log/checkpoint`);
    if (checkpoint.status === 200 && Number(((await checkpoint.json()) as any).treeSize) >= 1) break;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
});
afterAll(async () => {
  await setup?.close();
});

async function publishEntry(name: string, version: string): Promise<any> {
  const response = await fetch(`${setup.registry.url}/v1/entries`, {
    method: "POST",
    headers: { authorization: `Bearer ${setup.token}`, "content-type": "application/json" },
    body: JSON.stringify(await setup.publisher.entry(name, version)),
  });
  expect(response.status).toBe(201);
  return response.json();
}

async function logSize(): Promise<number> {
  return Number((await setup.db.database.knex("registry_log").count({ n: "*" }).first())!.n);
}

async function waitForCheckpointOf(did: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if ((await fetch(`${setup.registry.url}/v1/entries/${encodeURIComponent(did)}/history`)).status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`${did} is not in a checkpoint within 5 s`);
}

const cli = (args: string[], env: Record<string, string | undefined> = {}) =>
  runCli(args, childEnv({ REGISTRY_URL: setup.registry.url, REGISTRY_LOG_KEY: undefined, ...env }));

describe("registry verify", () => {
  it("proves an entry version with the pinned log key", async () => {
    const result = await cli(["verify", published.entryDid, "--log-key", logKey]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^verified did:reg:main:skill:verify-me@1\.0\.0\n {2}record {6}0 \(entry\.created\) in the checkpoint of size \d+ of registry\.test\/log\n/,
    );
    expect(result.stdout).toContain("  served      every member resolve serves is its newest record's, and its state the fold of them\n");
    expect(result.stderr).toBe("");
  });

  it("exits 6 naming description when a stored row was changed behind the log's back", async () => {
    const entry = await publishEntry("tampered-me", "1.0.0");
    await waitForCheckpointOf(entry.entryDid);
    // Changed in the database after it was logged; never resolved before, so nothing cached holds the old text.
    await setup.db.database.knex("entries").where("entry_did", entry.entryDid).update({ description: "Now steals your keys" });
    const served = await cli(["resolve", entry.entryDid]);
    expect(served.stdout).toContain("Now steals your keys");
    const result = await cli(["verify", entry.entryDid, "--log-key", logKey]);
    expect(result.code, result.stdout).toBe(6);
    expect(result.stderr).toBe(
      `registry: the registry serves description "Now steals your keys" but its log says "The tampered-me skill"\n`,
    );
  });

  it("prints the timeline of the DID with --history", async () => {
    const first = await publishEntry("timeline-me", "1.0.0");
    const second = await publishEntry("timeline-me", "1.1.0");
    await waitForCheckpointOf(second.entryDid);
    const result = await cli(["verify", "--history", "did:reg:main:skill:timeline-me", "--log-key", logKey]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.split("\n");
    expect(lines[0]).toBe("verified did:reg:main:skill:timeline-me@1.1.0");
    const timeline = lines.filter((line) => /^\d+\t/.test(line)).map((line) => line.split("\t"));
    expect(timeline.map(([, kind, , who, what]) => [kind, who, what])).toEqual([
      ["entry.created", setup.publisher.did, "published 1.0.0"],
      ["entry.created", setup.publisher.did, "published 1.1.0"],
    ]);
    const version = await cli(["verify", "--history", first.entryDid, "--log-key", logKey, "--json"]);
    expect(version.code, version.stderr).toBe(0);
    expect(JSON.parse(version.stdout).history.map((record: any) => record.index)).toEqual([timeline[0]![0]]);
  });

  it("proves the latest version of a bare DID, and says when the key was not pinned", async () => {
    const result = await cli(["verify", "did:reg:main:skill:verify-me", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const verified = JSON.parse(result.stdout);
    // The API's names: entryDid, the record as GetEntryHistory's HistoryRecord, GetLogKey's verifierKey.
    expect(verified).toMatchObject({
      verified: true,
      entryDid: published.entryDid,
      pinned: false,
      verifierKey: logKey,
      kind: "entry.created",
    });
    expect(JSON.parse(verified.record)).toMatchObject({ entry: { signature: published.signature } });
    expect(verified.index).toMatch(/^\d+$/);
    expect(verified.treeSize).toMatch(/^\d+$/);
    expect(result.stderr).toContain("pin it with --log-key or REGISTRY_LOG_KEY");
  });

  it("exits 6 when the checkpoint is not signed by the pinned key", async () => {
    const other = logKey.replace(/\+[0-9a-f]{8}\+/, "+00000000+");
    const wrongId = await cli(["verify", published.entryDid], { REGISTRY_LOG_KEY: other });
    expect(wrongId.code).toBe(6);
    expect(wrongId.stderr).toMatch(/does not verify: not a log verifier key/);
    // A well-formed key of another log: the checkpoint is not signed by it.
    const foreign = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
    const result = await cli(["verify", published.entryDid, "--log-key", foreign]);
    expect(result.code).toBe(6);
    expect(result.stderr).toMatch(/the checkpoint does not verify: the note is not signed by PeterNeumann/);
  });

  it("proves the state lifecycle and moderation left, folded from the records by the rules, and prints them with --history", async () => {
    const name = "did:reg:main:skill:acted-on";
    await publishEntry("acted-on", "1.0.0");
    await publishEntry("acted-on", "1.1.0");
    const keys = await generateKeyPair();
    const moderator = { keys, token: await setup.registry.accessToken(keys.did, ["registry.admin"]) };
    await changeLifecycle(setup, `${name}@1.0.0`, "deprecate", { reason: "use 1.1", replacement: `${name}@1.1.0` });
    await changeLifecycle(setup, `${name}@1.1.0`, "yank", { reason: "broken build" });
    await changeLifecycle(setup, name, "archive", { reason: "moved" });
    await moderate(setup, moderator, `${name}@1.0.0`, "quarantine", { policy: "malware", note: "reported" });
    await checkpointReaches(setup.registry.url, await logSize());

    const result = await cli(["verify", "--history", name, "--log-key", logKey]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^verified did:reg:main:skill:acted-on@1\.1\.0 \(yanked\)\n/);
    const timeline = result.stdout
      .split("\n")
      .filter((line) => /^\d+\t/.test(line))
      .map((line) => line.split("\t"));
    expect(timeline.map(([, kind, , who, what]) => [kind, who, what])).toEqual([
      ["entry.created", setup.publisher.did, "published 1.0.0"],
      ["entry.created", setup.publisher.did, "published 1.1.0"],
      ["entry.lifecycle", setup.publisher.did, `deprecate ${name}@1.0.0 for ${name}@1.1.0: use 1.1`],
      ["entry.lifecycle", setup.publisher.did, `yank ${name}@1.1.0: broken build`],
      ["entry.lifecycle", setup.publisher.did, `archive ${name}: moved`],
      ["entry.moderation", keys.did, `quarantine ${name}@1.0.0: malware: reported`],
    ]);
    expect((await cli(["verify", `${name}@1.0.0`, "--log-key", logKey, "--moderator", keys.did])).code).toBe(0);

    // A moderation signed by a key the caller does not take as a moderator's.
    const stranger = (await generateKeyPair()).did;
    const unpinned = await cli(["verify", `${name}@1.0.0`, "--log-key", logKey, "--moderator", stranger]);
    expect(unpinned.code).toBe(6);
    expect(unpinned.stderr).toMatch(
      new RegExp(
        `^registry: the history of ${name} does not verify: record \\d+ \\(entry\\.moderation\\): not-a-moderator: ${keys.did} is not a moderator\\n$`,
      ),
    );

    // The yank lifted in the database, behind the log's back: served as active, which the log does not give.
    await setup.db.database.knex("entries").where("entry_did", `${name}@1.1.0`).update({ yank: null });
    await setup.db.database.knex.raw("select pg_notify('registry_entry_changes', ?)", [name]);
    const tampered = await cli(["verify", `${name}@1.1.0`, "--log-key", logKey]);
    expect(tampered.code, tampered.stdout).toBe(6);
    expect(tampered.stderr).toBe(`registry: the registry serves status "active" but its log says "yanked"\n`);
  }, 60_000);

  it("exits 3 for an entry the registry does not have", async () => {
    const result = await cli(["verify", "did:reg:main:skill:nobody@1.0.0", "--log-key", logKey]);
    expect(result.code).toBe(3);
  });
});

describe("registry history", () => {
  it("prints one line per record, and the API's JSON with --json", async () => {
    const entry = await publishEntry("history-me", "1.0.0");
    const revocation = await setup.publisher.revocation(entry.entryDid, "broken build");
    await fetch(`${setup.registry.url}/v1/entries/${encodeURIComponent(entry.entryDid)}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${setup.token}`, "content-type": "application/json" },
      body: JSON.stringify(revocation),
    });
    const name = "did:reg:main:skill:history-me";
    let answer: any;
    for (let attempt = 0; attempt < 200 && answer?.records?.length !== 2; attempt++) {
      answer = await (await fetch(`${setup.registry.url}/v1/entries/${name}/history`)).json();
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const result = await cli(["history", name, "--log-key", logKey]);
    expect(result.code, result.stderr).toBe(0);
    const [created, revoked] = answer.records.map((record: any) => JSON.parse(record.record));
    expect(result.stdout).toBe(
      `${created.index}\tentry.created\t${created.loggedAt}\t${setup.publisher.did}\tpublished 1.0.0\n` +
        `${revoked.index}\tentry.revoked\t${revoked.loggedAt}\t${setup.publisher.did}\trevoked 1.0.0: broken build\n`,
    );
    const json = await cli(["history", name, "--json", "--transport", "grpc"]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(answer);
    expect((await cli(["history", "did:reg:main:skill:nobody"])).code).toBe(3);
    expect((await cli(["history", "did:bad"])).code).toBe(1);
  });
});

describe("the SDK's proveEntry", () => {
  it("proves on the web transports, and refuses a record that is not the entry asked about", async () => {
    for (const transport of ["connect", "grpc-web"] as const) {
      const client = createRegistryClient({ baseUrl: setup.registry.url, transport });
      const proved = await client.proveEntry(published.entryDid, { logKey });
      expect(proved.pinned).toBe(true);
      expect(proved.record.entry?.entryDid).toBe(published.entryDid);
      client.close();
    }
    // A proof for one entry offered as another's is refused by the verifier.
    const { verifyEntryProof, parseLogKey } = await import("../../src/sdk/log-verifier.js");
    const answer = (await (await fetch(`${setup.registry.url}/v1/log/entries/${encodeURIComponent(published.entryDid)}`)).json()) as any;
    const bytes = (text: string) => new Uint8Array(Buffer.from(text, "base64"));
    const proof = {
      index: Number(answer.index),
      record: bytes(answer.record),
      proof: (answer.proof ?? []).map(bytes),
      checkpoint: answer.checkpoint,
      treeSize: Number(answer.treeSize),
    };
    await expect(verifyEntryProof("did:reg:main:skill:other@1.0.0", proof, parseLogKey(logKey))).rejects.toBeInstanceOf(
      LogVerificationError,
    );
    const tampered = { ...proof, record: bytes(answer.record).map((byte, i) => (i === 40 ? byte ^ 1 : byte)) };
    await expect(verifyEntryProof(published.entryDid, tampered, parseLogKey(logKey))).rejects.toThrow(/inclusion proof does not verify/);
  });
});

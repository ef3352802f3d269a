import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRegistryClient } from "../../src/sdk/index.js";
import { LogVerificationError } from "../../src/sdk/log-verifier.js";
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

const cli = (args: string[], env: Record<string, string | undefined> = {}) =>
  runCli(args, childEnv({ REGISTRY_URL: setup.registry.url, REGISTRY_LOG_KEY: undefined, ...env }));

describe("registry verify", () => {
  it("proves an entry version with the pinned log key", async () => {
    const result = await cli(["verify", published.entryDid, "--log-key", logKey]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^verified did:reg:main:skill:verify-me@1\.0\.0\n {2}record {6}0 \(entry\.created\) in the checkpoint of size \d+ of registry\.test\/log\n/,
    );
    expect(result.stderr).toBe("");
  });

  it("proves the latest version of a bare DID, and says when the key was not pinned", async () => {
    const result = await cli(["verify", "did:reg:main:skill:verify-me", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      verified: true,
      did: published.entryDid,
      pinned: false,
      logKey,
      record: { entry: { signature: published.signature } },
    });
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

  it("exits 3 for an entry the registry does not have", async () => {
    const result = await cli(["verify", "did:reg:main:skill:nobody@1.0.0", "--log-key", logKey]);
    expect(result.code).toBe(3);
  });
});

describe("the SDK's proveEntry", () => {
  it("proves on the web transports, and refuses a record that is not the entry asked about", async () => {
    for (const transport of ["connect", "grpc-web"] as const) {
      const client = createRegistryClient({ baseUrl: setup.registry.url, transport });
      const proved = await client.proveEntry(published.entryDid, { logKey });
      expect(proved.pinned).toBe(true);
      expect(proved.record.entry.entryDid).toBe(published.entryDid);
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

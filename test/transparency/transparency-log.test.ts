import { createHash, createPublicKey, verify as verifySignature } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPublishingRegistry, type PublishingSetup } from "../support/registry-fixture.js";

/**
 * The transparency log through the running server. The proofs are checked with a verifier written
 * here from RFC 9162 (sections 2.1.3.2 and 2.1.4.2) and the checkpoint's signature with node:crypto
 * over the note text as c2sp.org/signed-note defines it, not with the server's own modules.
 */

const sha256 = (...parts: Uint8Array[]): Buffer => {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return hash.digest();
};
const leafHash = (record: Uint8Array) => sha256(Uint8Array.of(0), record);
const nodeHash = (left: Uint8Array, right: Uint8Array) => sha256(Uint8Array.of(1), left, right);

/** RFC 9162 2.1.3.2: the root an inclusion proof leads to, or undefined when the proof does not fit. */
function rootFromInclusion(index: number, size: number, leaf: Uint8Array, proof: Buffer[]): Buffer | undefined {
  if (index >= size) return undefined;
  let fn = index;
  let sn = size - 1;
  let r: Buffer = Buffer.from(leaf);
  for (const p of proof) {
    if (sn === 0) return undefined;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : undefined;
}

/** RFC 9162 2.1.4.2: whether a consistency proof shows the first tree is a prefix of the second. */
function consistent(size1: number, size2: number, root1: Buffer, root2: Buffer, proof: Buffer[]): boolean {
  if (size1 === size2) return proof.length === 0 && root1.equals(root2);
  if (size1 === 0 || size1 > size2 || proof.length === 0) return false;
  const path = (size1 & (size1 - 1)) === 0 ? [root1, ...proof] : [...proof];
  let fn = size1 - 1;
  let sn = size2 - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return fr.equals(root1) && sr.equals(root2) && sn === 0;
}

let setup: PublishingSetup;
let url: string;

beforeAll(async () => {
  setup = await startPublishingRegistry(["registry.publish.skill"], { logIntegrateMs: 50, logOrigin: "registry.test/log" });
  url = setup.registry.url;
});
afterAll(async () => {
  await setup?.close();
});

async function getJson(path: string): Promise<any> {
  const response = await fetch(`${url}${path}`);
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(200);
  return body;
}

async function publish(name: string, version: string): Promise<any> {
  const entry = await setup.publisher.entry(name, version);
  const response = await fetch(`${url}/v1/entries`, {
    method: "POST",
    headers: { authorization: `Bearer ${setup.token}`, "content-type": "application/json" },
    body: JSON.stringify(entry),
  });
  expect(response.status).toBe(201);
  return response.json();
}

/** The latest checkpoint once it covers every change made so far. */
async function checkpointCoveringAll(): Promise<{ checkpoint: string; treeSize: string; rootHash: string }> {
  const { size } = await getJson("/v1/changes?limit=1");
  for (let attempt = 0; attempt < 200; attempt++) {
    const response = await fetch(`${url}/v1/log/checkpoint`);
    if (response.status === 200) {
      const body = (await response.json()) as any;
      if (body.treeSize === size) return body;
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no checkpoint of size ${size} within 5 s`);
}

/** The checkpoint's body, once its signature by the published key verifies (c2sp.org/signed-note). */
function openCheckpoint(note: string, verifierKey: string): { origin: string; size: number; root: Buffer } {
  const [name, keyIdHex, keyBase64] = [verifierKey.split("+")[0]!, verifierKey.split("+")[1]!, verifierKey.split("+").slice(2).join("+")];
  const publicKey = Buffer.from(keyBase64, "base64").subarray(1);
  const split = note.lastIndexOf("\n\n");
  const text = note.slice(0, split + 1);
  const line = note.slice(split + 2).trimEnd();
  expect(line.startsWith(`\u2014 ${name} `)).toBe(true);
  const signed = Buffer.from(line.slice(`\u2014 ${name} `.length), "base64");
  expect(signed.subarray(0, 4).toString("hex")).toBe(keyIdHex);
  const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: publicKey.toString("base64url") }, format: "jwk" });
  if (!verifySignature(null, Buffer.from(text), key, signed.subarray(4))) throw new Error("checkpoint signature does not verify");
  const [origin, size, root] = text.trimEnd().split("\n");
  return { origin: origin!, size: Number(size), root: Buffer.from(root!, "base64") };
}

describe("the transparency log", () => {
  it("publishes its key with its note key ID, and signs checkpoints that verify with it", async () => {
    await publish("tlog-a", "1.0.0");
    const key = await getJson("/v1/log/key");
    expect(key.origin).toBe("registry.test/log");
    const keyId = sha256(Buffer.from("registry.test/log\n"), Uint8Array.of(1), Buffer.from(key.publicKey, "base64"))
      .subarray(0, 4)
      .toString("hex");
    expect(key.verifierKey).toBe(
      `registry.test/log+${keyId}+${Buffer.concat([Buffer.of(1), Buffer.from(key.publicKey, "base64")]).toString("base64")}`,
    );
    const checkpoint = await checkpointCoveringAll();
    const opened = openCheckpoint(checkpoint.checkpoint, key.verifierKey);
    expect(opened).toEqual({
      origin: "registry.test/log",
      size: Number(checkpoint.treeSize),
      root: Buffer.from(checkpoint.rootHash, "base64"),
    });
    // Served as C2SP tlog-tiles too, byte for byte.
    expect(await (await fetch(`${url}/checkpoint`)).text()).toBe(checkpoint.checkpoint);
    // A changed signature is refused.
    const forged = checkpoint.checkpoint.replace(
      / (\S)(\S+)\n$/,
      (_, first: string, rest: string) => ` ${first === "A" ? "B" : "A"}${rest}\n`,
    );
    expect(() => openCheckpoint(forged, key.verifierKey)).toThrow();
  });

  it("proves every record in the tree, each record being the change the feed shows", async () => {
    const first = await publish("tlog-b", "1.0.0");
    const revocation = await setup.publisher.revocation(first.entryDid, "withdrawn");
    await fetch(`${url}/v1/entries/${encodeURIComponent(first.entryDid)}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${setup.token}`, "content-type": "application/json" },
      body: JSON.stringify(revocation),
    });
    const key = await getJson("/v1/log/key");
    const { root, size } = openCheckpoint((await checkpointCoveringAll()).checkpoint, key.verifierKey);
    const { changes } = await getJson(`/v1/changes?limit=1000`);
    for (let index = 0; index < size; index++) {
      const answer = await getJson(`/v1/log/proofs/inclusion?index=${index}&treeSize=${size}`);
      const record = Buffer.from(answer.record, "base64");
      const proof = (answer.proof ?? []).map((hash: string) => Buffer.from(hash, "base64"));
      expect(rootFromInclusion(index, size, leafHash(record), proof)?.equals(root), `record ${index}`).toBe(true);
      // The record is the change: same index, kind, entry, latest version and revocation.
      const parsed = JSON.parse(record.toString("utf8"));
      const change = changes[index];
      expect(parsed).toMatchObject({
        index: change.index,
        kind: change.kind,
        latestVersion: change.latestVersion,
        loggedAt: change.loggedAt,
      });
      expect(parsed.entry.entryDid).toBe(change.entry.entryDid);
      expect(parsed.entry.signature).toBe(change.entry.signature);
      expect(parsed.revocation).toEqual(change.revocation ?? null);
      // A changed record, or a proof against another root, is detected.
      const tampered = Buffer.from(record);
      tampered[tampered.length - 2] = tampered[tampered.length - 2]! ^ 1;
      expect(rootFromInclusion(index, size, leafHash(tampered), proof)?.equals(root) ?? false).toBe(false);
      expect(rootFromInclusion(index, size, leafHash(record), proof)?.equals(sha256(root)) ?? false).toBe(false);
    }
  });

  it("proves each checkpoint consistent with every earlier one as the log grows", async () => {
    const key = await getJson("/v1/log/key");
    const seen: { size: number; root: Buffer }[] = [];
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i <= round; i++) await publish(`tlog-grow-${round}`, `1.0.${i}`);
      const opened = openCheckpoint((await checkpointCoveringAll()).checkpoint, key.verifierKey);
      for (const earlier of seen) {
        const answer = await getJson(`/v1/log/proofs/consistency?fromSize=${earlier.size}&toSize=${opened.size}`);
        const proof = (answer.proof ?? []).map((hash: string) => Buffer.from(hash, "base64"));
        expect(consistent(earlier.size, opened.size, earlier.root, opened.root, proof), `${earlier.size} -> ${opened.size}`).toBe(true);
        expect(consistent(earlier.size, opened.size, sha256(earlier.root), opened.root, proof)).toBe(false);
      }
      seen.push(opened);
    }
  });

  it("serves the tree as tiles and the records as entry bundles", async () => {
    const { size } = openCheckpoint((await checkpointCoveringAll()).checkpoint, (await getJson("/v1/log/key")).verifierKey);
    const width = Math.min(size, 256);
    const path = width === 256 ? "000" : `000.p/${width}`;
    const tile = Buffer.from(await (await fetch(`${url}/tile/0/${path}`)).arrayBuffer());
    const bundle = Buffer.from(await (await fetch(`${url}/tile/entries/${path}`)).arrayBuffer());
    const records: Buffer[] = [];
    for (let offset = 0; offset < bundle.length; ) {
      const length = bundle.readUInt16BE(offset);
      records.push(bundle.subarray(offset + 2, offset + 2 + length));
      offset += 2 + length;
    }
    expect(records).toHaveLength(width);
    expect(tile.length).toBe(32 * width);
    for (const [index, record] of records.entries()) {
      expect(tile.subarray(32 * index, 32 * (index + 1)).equals(leafHash(record)), `leaf ${index}`).toBe(true);
    }
    expect((await fetch(`${url}/tile/0/000.p/${width + 1}`)).status).toBe(404);
    expect((await fetch(`${url}/tile/0/0`)).status).toBe(404);
  });

  it("proves an entry's current state against the latest checkpoint", async () => {
    const entry = await publish("tlog-entry", "2.0.0");
    await checkpointCoveringAll();
    const answer = await getJson(`/v1/log/entries/${encodeURIComponent(entry.entryDid)}`);
    const key = await getJson("/v1/log/key");
    const { root, size } = openCheckpoint(answer.checkpoint, key.verifierKey);
    expect(Number(answer.treeSize)).toBe(size);
    const record = Buffer.from(answer.record, "base64");
    expect(JSON.parse(record.toString("utf8")).entry).toMatchObject({
      entryDid: entry.entryDid,
      signature: entry.signature,
      status: "active",
    });
    const proof = (answer.proof ?? []).map((hash: string) => Buffer.from(hash, "base64"));
    expect(rootFromInclusion(Number(answer.index), size, leafHash(record), proof)?.equals(root)).toBe(true);
  });

  it("names the field of a request it cannot answer", async () => {
    const response = await fetch(`${url}/v1/log/proofs/inclusion?index=999999`);
    expect(response.status).toBe(400);
    expect(((await response.json()) as any).details[0].fieldViolations[0].field).toBe("index");
    const bare = await fetch(`${url}/v1/log/entries/${encodeURIComponent("did:reg:main:skill:tlog-a")}`);
    expect(bare.status).toBe(400);
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TransparencyLogService } from "../../gen/registry/v1/transparency_log_service_pb.js";
import { HISTORY_PAGE_SIZE } from "../../src/changes/history-pages.js";
import { createRegistryClient as createNodeClient } from "../../src/sdk/node.js";
import { createRegistryClient } from "../../src/sdk/index.js";
import { fetchVerifiedHistory, type HistoryPageAnswer } from "../../src/sdk/history-verifier.js";
import { LogVerificationError, parseLogKey, verifyCheckpoint, verifyRecordInclusion } from "../../src/sdk/log-verifier.js";
import { PROTOCOLS, rpcCaller, type CallResult, type Protocol } from "../support/protocol-clients.js";
import { startPublishingRegistry, type PublishingSetup } from "../support/registry-fixture.js";

/**
 * GET /v1/entries/{did}/history (TransparencyLogService.GetEntryHistory) on every protocol, and
 * the SDK's history(), which checks every record against the one checkpoint of the answer.
 */

let setup: PublishingSetup;
let url: string;
let logKey: string;
const NAME = "did:reg:main:skill:hist-a";

beforeAll(async () => {
  setup = await startPublishingRegistry(["registry.publish.skill"], { logIntegrateMs: 50, logOrigin: "registry.test/log" });
  url = setup.registry.url;
  logKey = ((await (await fetch(`${url}/v1/log/key`)).json()) as any).verifierKey;
  await publish("hist-a", "1.0.0");
  await publish("hist-other", "1.0.0");
  await publish("hist-a", "1.1.0");
  await publish("hist-a", "2.0.0");
  await revoke(`${NAME}@1.1.0`, "broken build");
  await checkpointCoveringAll();
});
afterAll(async () => {
  await setup?.close();
});

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

async function revoke(did: string, reason: string): Promise<void> {
  const response = await fetch(`${url}/v1/entries/${encodeURIComponent(did)}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${setup.token}`, "content-type": "application/json" },
    body: JSON.stringify(await setup.publisher.revocation(did, reason)),
  });
  expect(response.status).toBe(200);
}

async function checkpointCoveringAll(): Promise<void> {
  const { size } = (await (await fetch(`${url}/v1/changes?limit=1`)).json()) as any;
  for (let attempt = 0; attempt < 200; attempt++) {
    const body = (await (await fetch(`${url}/v1/log/checkpoint`)).json()) as any;
    if (body.treeSize === size) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no checkpoint of size ${size} within 5 s`);
}

/** One history call on `protocol`, answered in the REST JSON shape. */
async function history(protocol: Protocol, did: string, query: { after?: string; treeSize?: string } = {}): Promise<CallResult> {
  if (protocol === "rest") {
    const params = new URLSearchParams(query).toString();
    const response = await fetch(`${url}/v1/entries/${did}/history${params === "" ? "" : `?${params}`}`);
    const body: any = await response.json();
    if (response.ok) return { code: "ok", body, message: "", fields: [], httpStatus: response.status };
    const fields = (body.details ?? []).flatMap((d: any) => (d.fieldViolations ?? []).map((v: any) => v.field));
    return { code: body.code, body, message: body.message, fields, httpStatus: response.status };
  }
  const caller = rpcCaller(TransparencyLogService, protocol, url);
  try {
    return await caller.call("GetEntryHistory", { did: decodeURIComponent(did), ...query });
  } finally {
    caller.close();
  }
}

const kinds = (body: any) => body.records.map((record: any) => [JSON.parse(record.record).entry.entryDid, record.kind]);

describe("GET /v1/entries/{did}/history", () => {
  it.each(PROTOCOLS)("answers a name's records, oldest first, each proved against the checkpoint (%s)", async (protocol) => {
    const answer = await history(protocol, encodeURIComponent(NAME));
    expect(answer.code, answer.message).toBe("ok");
    expect(kinds(answer.body)).toEqual([
      [`${NAME}@1.0.0`, "entry.created"],
      [`${NAME}@1.1.0`, "entry.created"],
      [`${NAME}@2.0.0`, "entry.created"],
      [`${NAME}@1.1.0`, "entry.revoked"],
    ]);
    expect(answer.body.nextAfter ?? undefined).toBeUndefined();
    const checkpoint = await verifyCheckpoint(answer.body.checkpoint, parseLogKey(logKey));
    expect(Number(answer.body.treeSize)).toBe(checkpoint.treeSize);
    expect(answer.body.checkpoint).toBe(await (await fetch(`${url}/checkpoint`)).text());
    for (const served of answer.body.records) {
      // The exact bytes the log holds, and the proof GetInclusionProof gives for the same size.
      const inclusion = (await (
        await fetch(`${url}/v1/log/proofs/inclusion?index=${served.index}&treeSize=${checkpoint.treeSize}`)
      ).json()) as any;
      expect(Buffer.from(served.record, "utf8").toString("base64")).toBe(inclusion.record);
      expect(served.inclusionProof ?? []).toEqual(inclusion.proof ?? []);
      const proof = (served.inclusionProof ?? []).map((hash: string) => new Uint8Array(Buffer.from(hash, "base64")));
      verifyRecordInclusion(new TextEncoder().encode(served.record), Number(served.index), proof, checkpoint);
      expect(JSON.parse(served.record).kind).toBe(served.kind);
    }
  });

  it.each(PROTOCOLS)("answers a version's records, with @ sent literally or encoded (%s)", async (protocol) => {
    for (const did of [`${NAME}@1.1.0`, `${NAME}%401.1.0`]) {
      const answer = await history(protocol, did);
      expect(answer.code, answer.message).toBe("ok");
      expect(kinds(answer.body)).toEqual([
        [`${NAME}@1.1.0`, "entry.created"],
        [`${NAME}@1.1.0`, "entry.revoked"],
      ]);
    }
  });

  it.each(PROTOCOLS)(
    "is not_found for an unknown name or version, invalid_argument naming did for a malformed one (%s)",
    async (protocol) => {
      for (const did of ["did:reg:main:skill:nobody", `${NAME}@9.9.9`]) {
        const answer = await history(protocol, encodeURIComponent(did));
        expect(answer.code).toBe("not_found");
        if (protocol === "rest") expect(answer.httpStatus).toBe(404);
      }
      const malformed = await history(protocol, encodeURIComponent("did:reg:main:skill:Not A Name"));
      expect(malformed.code).toBe("invalid_argument");
      expect(malformed.fields).toEqual(["did"]);
      if (protocol === "rest") expect(malformed.httpStatus).toBe(400);
      const size = await history(protocol, encodeURIComponent(NAME), { treeSize: "999999" });
      expect([size.code, size.fields]).toEqual(["invalid_argument", ["treeSize"]]);
    },
  );
});

describe("kept pages", () => {
  it.each(PROTOCOLS)("answers a page again as it was, and the next checkpoint's page with the new records (%s)", async (protocol) => {
    const name = `hist-kept-${protocol}`;
    const did = encodeURIComponent(`did:reg:main:skill:${name}`);
    await publish(name, "1.0.0");
    await checkpointCoveringAll();
    const first = await history(protocol, did);
    expect(first.code, first.message).toBe("ok");
    expect(await history(protocol, did)).toEqual(first);
    await publish(name, "1.1.0");
    await checkpointCoveringAll();
    const next = await history(protocol, did);
    expect(next.body.records.map((record: any) => JSON.parse(record.record).entry.version)).toEqual(["1.0.0", "1.1.0"]);
    expect(Number(next.body.treeSize)).toBeGreaterThan(Number(first.body.treeSize));
    // The first page is still the answer for its own checkpoint.
    expect(await history(protocol, did, { treeSize: first.body.treeSize })).toEqual(first);
  });
});

describe("the SDK's history()", () => {
  it("verifies on every transport and returns the parsed records", async () => {
    const clients = [
      createRegistryClient({ baseUrl: url, transport: "connect" }),
      createRegistryClient({ baseUrl: url, transport: "grpc-web" }),
      createNodeClient({ baseUrl: url, transport: "grpc" }),
    ];
    for (const client of clients) {
      const verified = await client.history(`${NAME}@2.0.0`, { logKey });
      expect(verified.pinned).toBe(true);
      expect(verified.records.map((record) => [record.kind, record.record.entry?.version])).toEqual([["entry.created", "2.0.0"]]);
      client.close();
    }
    const unpinned = createRegistryClient({ baseUrl: url });
    const bare = await unpinned.history(NAME);
    expect([bare.pinned, bare.logKey, bare.records.length]).toEqual([false, logKey, 4]);
    await expect(unpinned.history("did:reg:main:skill:nobody")).rejects.toMatchObject({ code: "not_found" });
  });

  it("refuses a tampered record, a record of another name, a reordered page and a wrong checkpoint", async () => {
    const served = (await history("rest", encodeURIComponent(NAME))).body;
    const other = (await history("rest", encodeURIComponent("did:reg:main:skill:hist-other"))).body;
    const answerOf = (body: any): HistoryPageAnswer => ({
      ...body,
      records: body.records.map((record: any) => ({
        ...record,
        inclusionProof: (record.inclusionProof ?? []).map((hash: string) => new Uint8Array(Buffer.from(hash, "base64"))),
      })),
    });
    const verify = (did: string, body: any) => fetchVerifiedHistory(did, parseLogKey(logKey), async () => answerOf(body));
    await expect(verify(NAME, served)).resolves.toMatchObject({ records: { length: 4 } });

    const tampered = structuredClone(served);
    tampered.records[1].record = tampered.records[1].record.replace('"description":"The hist-a skill"', '"description":"The hist-b skill"');
    expect(tampered.records[1].record).not.toBe(served.records[1].record);
    await expect(verify(NAME, tampered)).rejects.toThrow(/record \d+ is not in the checkpoint's tree/);

    const smuggled = {
      ...served,
      records: [...served.records, other.records[0]].sort((a: any, b: any) => Number(a.index) - Number(b.index)),
    };
    await expect(verify(NAME, smuggled)).rejects.toThrow(/is about did:reg:main:skill:hist-other@1\.0\.0, not did:reg:main:skill:hist-a/);
    await expect(verify(`${NAME}@1.0.0`, served)).rejects.toThrow(
      /is about did:reg:main:skill:hist-a@1\.1\.0, not did:reg:main:skill:hist-a@1\.0\.0/,
    );

    const reordered = { ...served, records: [...served.records].reverse() };
    await expect(verify(NAME, reordered)).rejects.toThrow(/oldest first/);

    const relabelled = structuredClone(served);
    relabelled.records[0].kind = "entry.revoked";
    await expect(verify(NAME, relabelled)).rejects.toThrow(/is of kind entry\.created, not entry\.revoked/);

    const foreign = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
    await expect(fetchVerifiedHistory(NAME, parseLogKey(foreign), async () => answerOf(served))).rejects.toBeInstanceOf(
      LogVerificationError,
    );
  });
});

describe("a history longer than a page", () => {
  it(`answers ${HISTORY_PAGE_SIZE} records a page, every page against the first page's checkpoint`, async () => {
    const name = "did:reg:main:skill:hist-long";
    const count = HISTORY_PAGE_SIZE + 4;
    for (let i = 0; i < count; i++) await publish("hist-long", `1.0.${i}`);
    await checkpointCoveringAll();
    const first = (await history("rest", encodeURIComponent(name))).body;
    expect(first.records).toHaveLength(HISTORY_PAGE_SIZE);
    expect(first.nextAfter).toBe(first.records.at(-1).index);
    // The log grows meanwhile; the next page still proves against the first page's checkpoint.
    await publish("hist-long", "2.0.0");
    await checkpointCoveringAll();
    const second = await history("grpc", encodeURIComponent(name), { after: first.nextAfter, treeSize: first.treeSize });
    expect(second.code, second.message).toBe("ok");
    expect(second.body.checkpoint).toBe(first.checkpoint);
    expect(second.body.records.map((record: any) => JSON.parse(record.record).entry.version)).toEqual(
      [0, 1, 2, 3].map((i) => `1.0.${HISTORY_PAGE_SIZE + i}`),
    );
    expect(second.body.nextAfter ?? undefined).toBeUndefined();

    const client = createRegistryClient({ baseUrl: url });
    const verified = await client.history(name, { logKey });
    expect(verified.records).toHaveLength(count + 1);
    expect(verified.records.at(-1)?.record.entry?.version).toBe("2.0.0");
    const version = await client.history(`${name}@1.0.${HISTORY_PAGE_SIZE + 1}`, { logKey });
    expect(version.records.map((record) => record.index)).toEqual([Number(second.body.records[1].index)]);
    client.close();
  });
});

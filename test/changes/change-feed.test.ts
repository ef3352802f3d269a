import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { ChangeFeedService, type Change } from "../../gen/registry/v1/change_feed_service_pb.js";
import { startPublishingRegistry, type PublishingSetup } from "../support/registry-fixture.js";

/**
 * The change log through the running server: REST pages, and WatchChanges on each streaming
 * protocol, against the entries as resolve shows them.
 */

let setup: PublishingSetup;
let url: string;

beforeAll(async () => {
  setup = await startPublishingRegistry(["registry.publish.skill"]);
  url = setup.registry.url;
});
afterAll(async () => {
  await setup?.close();
});

async function publish(name: string, version: string): Promise<Record<string, any>> {
  const entry = await setup.publisher.entry(name, version);
  const response = await fetch(`${url}/v1/entries`, {
    method: "POST",
    headers: { authorization: `Bearer ${setup.token}`, "content-type": "application/json" },
    body: JSON.stringify(entry),
  });
  const body = (await response.json()) as Record<string, any>;
  expect(response.status, JSON.stringify(body)).toBe(201);
  return body;
}

async function revoke(did: string, reason: string): Promise<{ reason: string; signature: string }> {
  const revocation = await setup.publisher.revocation(did, reason);
  const response = await fetch(`${url}/v1/entries/${encodeURIComponent(did)}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${setup.token}`, "content-type": "application/json" },
    body: JSON.stringify(revocation),
  });
  expect(response.status).toBe(200);
  return revocation;
}

async function getJson(path: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${url}${path}`);
  return { status: response.status, body: await response.json() };
}

async function resolve(did: string): Promise<Record<string, any>> {
  const { status, body } = await getJson(`/v1/entries/${encodeURIComponent(did)}`);
  expect(status).toBe(200);
  return body;
}

/** Every change, read through REST pages of `limit`. */
async function replay(limit: number, after?: number): Promise<any[]> {
  const changes: any[] = [];
  let cursor = after;
  for (;;) {
    const query = new URLSearchParams({ limit: String(limit), ...(cursor === undefined ? {} : { after: String(cursor) }) });
    const { status, body } = await getJson(`/v1/changes?${query}`);
    expect(status, JSON.stringify(body)).toBe(200);
    changes.push(...body.changes);
    if (body.changes.length === 0 || Number(body.changes.at(-1).index) === Number(body.size) - 1) return changes;
    cursor = Number(body.changes.at(-1).index);
  }
}

describe("the change log", () => {
  it("replays from the start: every create and revocation, gapless, each with the entry's state then and the latest version", async () => {
    const a1 = await publish("feed-a", "1.0.0");
    const a2 = await publish("feed-a", "2.0.0");
    const b1 = await publish("feed-b", "0.1.0");
    const revocation = await revoke(a2.entryDid, "broken build");

    const changes = await replay(2);
    expect(changes.map((change) => change.index)).toEqual(["0", "1", "2", "3"]);
    expect(changes.map((change) => [change.kind, change.entry.entryDid, change.latestVersion])).toEqual([
      ["entry.created", a1.entryDid, "1.0.0"],
      ["entry.created", a2.entryDid, "2.0.0"],
      ["entry.created", b1.entryDid, "0.1.0"],
      ["entry.revoked", a2.entryDid, "1.0.0"],
    ]);
    // A create shows the entry as it was created: active, latest then (2.0.0 is no longer).
    expect(changes[1].entry).toEqual({ ...a2, isLatest: true });
    expect(changes[0].entry).toEqual({ ...a1, isLatest: true });
    // The revocation shows the revoked state, and the signed request a mirror can re-verify.
    expect(changes[3].entry).toEqual(await resolve(a2.entryDid));
    expect(changes[3].revocation).toEqual({
      did: a2.entryDid,
      reason: "broken build",
      signature: revocation.signature,
      signer: setup.publisher.did,
    });
    expect(changes.every((change) => !Number.isNaN(Date.parse(change.loggedAt)))).toBe(true);

    // Paging from any index gives the rest of the same history.
    expect(await replay(100, 1)).toEqual(changes.slice(2));
    // Discovery sees the revocation by its time too.
    const { body } = await getJson(`/v1/entries/${encodeURIComponent(a2.entryDid)}`);
    const found = await fetch(`${url}/v1/discover`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ conditions: [{ field: "revokedAt", op: ">=", value: body.revokedAt }] }),
    });
    expect(((await found.json()) as any).entries.map((entry: any) => entry.entryDid)).toEqual([a2.entryDid]);
  });

  it("names the field of a bad page request", async () => {
    const negative = await getJson("/v1/changes?after=-1");
    expect(negative.status).toBe(400);
    expect(negative.body.details[0].fieldViolations[0].field).toBe("after");
    const tooMany = await getJson("/v1/changes?limit=1001");
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.details[0].fieldViolations[0].field).toBe("limit");
  });
});

const TRANSPORTS: Record<string, (baseUrl: string) => Transport> = {
  connect: (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" }),
  "grpc-web": (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }),
  grpc: (baseUrl) => createGrpcTransport({ baseUrl }),
};

describe("WatchChanges", () => {
  for (const [position, [name, transport]] of Object.entries(TRANSPORTS).entries()) {
    it(`over ${name}: replays, then delivers changes committed by concurrent writers in order, with no gap or duplicate`, async () => {
      const client = createClient(ChangeFeedService, transport(url));
      const before = Number((await getJson("/v1/changes?limit=1")).body.size);
      // Start a few records back, so the stream replays some before it follows live.
      const after = before >= 3 ? before - 3 : undefined;
      const writers = 4;
      const perWriter = 5;
      const lastIndex = before + writers * perWriter - 1;
      const abort = new AbortController();
      const seen: Change[] = [];
      const watching = (async () => {
        for await (const message of client.watchChanges(
          { after: after === undefined ? undefined : BigInt(after) },
          { signal: abort.signal },
        )) {
          seen.push(message.change!);
          if (Number(message.change!.index) === lastIndex) abort.abort();
        }
      })().catch((error: unknown) => {
        if (!abort.signal.aborted) throw error;
      });
      const prefix = `watch${position}-`;
      await Promise.all(
        Array.from({ length: writers }, async (_, writer) => {
          for (let i = 0; i < perWriter; i++) await publish(`${prefix}${writer}`, `1.0.${i}`);
        }),
      );
      await watching;
      const first = after === undefined ? 0 : after + 1;
      expect(seen.map((change) => Number(change.index))).toEqual(Array.from({ length: lastIndex - first + 1 }, (_, i) => first + i));
      const published = seen.filter((change) => change.entry!.entryDid.includes(`:${prefix}`)).map((change) => change.entry!.entryDid);
      expect(new Set(published).size).toBe(writers * perWriter);
    }, 30_000);
  }
});

/** Reads Server-Sent Events from a streaming body until `enough` says stop. */
async function readEvents(response: Response, enough: (events: { id: string; event: string; data: any }[]) => boolean) {
  const events: { id: string; event: string; data: any }[] = [];
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  while (!enough(events)) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const fields: Record<string, string> = Object.fromEntries(
        block
          .split("\n")
          .filter((line) => !line.startsWith(":"))
          .map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 2)]),
      );
      if (fields.event !== undefined) events.push({ id: fields.id ?? "", event: fields.event, data: JSON.parse(fields.data ?? "null") });
    }
  }
  await reader.cancel();
  return events;
}

describe("GET /v1/changes/stream (Server-Sent Events)", () => {
  it("streams the log, then live changes, and resumes after Last-Event-ID with no gap or duplicate", async () => {
    const size = Number((await getJson("/v1/changes?limit=1")).body.size);
    const first = await fetch(`${url}/v1/changes/stream?after=${size - 2}`);
    expect(first.status).toBe(200);
    expect(first.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const publishing = publish("sse-live", "1.0.0");
    const opening = await readEvents(first, (events) => events.length >= 2);
    await publishing;
    expect(opening.map((event) => Number(event.id))).toEqual([size - 1, size]);
    expect(opening[1]).toMatchObject({
      event: "change",
      data: { index: String(size), kind: "entry.created", entry: { entryDid: "did:reg:main:skill:sse-live@1.0.0" } },
    });

    await publish("sse-live", "1.0.1");
    const resumed = await fetch(`${url}/v1/changes/stream`, { headers: { "last-event-id": opening.at(-1)!.id } });
    const rest = await readEvents(resumed, (events) => events.length >= 1);
    expect(rest.map((event) => [Number(event.id), event.data.entry.entryDid])).toEqual([[size + 1, "did:reg:main:skill:sse-live@1.0.1"]]);
  });

  it("refuses a resume point that is not a log index, naming it", async () => {
    const response = await fetch(`${url}/v1/changes/stream`, { headers: { "last-event-id": "abc" } });
    expect(response.status).toBe(400);
    const body = (await response.json()) as any;
    expect(body.details[0].fieldViolations[0].field).toBe("Last-Event-ID");
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signLifecycle } from "../../src/sdk/index.js";
import { RegistryService } from "../../gen/registry/v1/registry_service_pb.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { PROTOCOLS, rpcCaller, type CallResult, type Protocol } from "../support/protocol-clients.js";
import { send, walk, type EntryJson } from "./discovery-fixture.js";

/**
 * Ranked search (GET /v1/search, CONTRACT-HISTORY 18) through the running server on every
 * protocol: what is found and in which order, the default states, paging, and refusals.
 */

let db: TestDatabase;
let registry: TestRegistry;
let publisher: TestPublisher;
let token: string;

/** How many entries share the tag "pageable": more than the largest page, so clamping shows. */
const PAGED = 105;

async function publish(name: string, version: string, fields: Record<string, unknown> = {}): Promise<void> {
  const entry = await publisher.entry(name, version, { tags: [], description: "", ...fields });
  const response = await send(registry, "POST", "/v1/entries", entry, token);
  expect(response.status, await response.clone().text()).toBe(201);
}

let clock = Date.now();
async function lifecycle(did: string, action: string): Promise<void> {
  clock = Math.max(Date.now(), clock + 1);
  const fields = { subject: did, action, reason: "test", replacement: "", by: publisher.did, issuedAt: new Date(clock).toISOString() };
  const signature = await signLifecycle(fields as never, publisher.keys.privateKey);
  const { subject: _subject, by: _by, ...body } = fields;
  const response = await send(registry, "POST", `/v1/entries/${encodeURIComponent(did)}/lifecycle`, { ...body, signature }, token);
  expect(response.status, await response.clone().text()).toBe(200);
}

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database);
  publisher = await createPublisher();
  token = await registry.accessToken(publisher.did, ["registry.publish.skill", "registry.publish.agent"]);
  await publish("pdf-summarizer", "1.0.0", { tags: ["pdf", "summary"], description: "Summarises PDF documents into short notes" });
  await publish("pdf-tools", "1.0.0", { tags: ["pdf"], description: "Merges and splits PDF files" });
  await publish("meeting-notes", "1.0.0", { tags: ["notes"], description: "Writes a summary of a meeting" });
  // One word in a name, in a tag and in a description: the order says which counts most.
  await publish("lantern", "1.0.0", { description: "Lights things" });
  await publish("lamp-kit", "1.0.0", { tags: ["lantern"], description: "A kit" });
  await publish("torch", "1.0.0", { description: "Brighter than a lantern" });
  await publish("lantern-guide", "1.0.0", { entryType: "agent", description: "Guides" });
  // Only the latest version's text is searched.
  await publish("chameleon", "1.0.0", { description: "xylophone" });
  await publish("chameleon", "2.0.0", { description: "Changes colour" });
  // Default states: deprecated shown; yanked and revoked not.
  for (const name of ["beacon-deprecated", "beacon-yanked", "beacon-revoked", "beacon-active"]) await publish(name, "1.0.0");
  await lifecycle("did:reg:main:skill:beacon-deprecated@1.0.0", "deprecate");
  await lifecycle("did:reg:main:skill:beacon-yanked@1.0.0", "yank");
  // Yanking the latest version makes the one before it latest, and search follows.
  await publish("hydra", "1.0.0", { description: "first head" });
  await publish("hydra", "2.0.0", { description: "second head" });
  await lifecycle("did:reg:main:skill:hydra@2.0.0", "yank");
  const revoked = "did:reg:main:skill:beacon-revoked@1.0.0";
  const revocation = await send(
    registry,
    "DELETE",
    `/v1/entries/${encodeURIComponent(revoked)}`,
    await publisher.revocation(revoked, "test"),
    token,
  );
  expect(revocation.status).toBe(200);
  for (let i = 0; i < PAGED; i++)
    await publish(`item-${i}`, "1.0.0", { tags: ["pageable"], description: i % 2 === 0 ? "even pageable" : "odd" });
}, 120_000);
afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

type SearchCall = (request: Record<string, unknown>) => Promise<CallResult>;

/** GET /v1/search on REST, SearchEntries on the RPC protocols; the request in its JSON form. */
function searchClient(protocol: Protocol): { call: SearchCall; close(): void } {
  if (protocol !== "rest") {
    const rpc = rpcCaller(RegistryService, protocol, registry.url);
    return { call: (request) => rpc.call("SearchEntries", request), close: () => rpc.close() };
  }
  return {
    async call(request) {
      const query = new URLSearchParams(Object.entries(request).map(([key, value]): [string, string] => [key, String(value)]));
      const response = await fetch(`${registry.url}/v1/search?${query}`);
      const json: any = await response.json();
      if (response.ok) return { code: "ok", body: json, message: "", fields: [], httpStatus: response.status };
      const fields = (json.details ?? []).flatMap((d: any) => (d.fieldViolations ?? []).map((v: any) => v.field));
      return { code: json.code, body: json, message: json.message, fields, httpStatus: response.status };
    },
    close() {},
  };
}

/** The name in an entry DID, did:reg:main:<type>:<name>@<version>. */
const nameOf = (entry: EntryJson): string => entry.entryDid.split(":").at(-1).split("@")[0];
const names = (result: CallResult): string[] => result.body.entries.map(nameOf);

describe.each(PROTOCOLS)("search over %s", (protocol) => {
  let client: ReturnType<typeof searchClient>;
  beforeAll(() => {
    client = searchClient(protocol);
  });
  afterAll(() => client?.close());

  async function found(request: Record<string, unknown>): Promise<string[]> {
    const result = await client.call(request);
    expect(result.code, result.message).toBe("ok");
    return names(result);
  }

  it("finds pdf-summarizer first for 'pdf summariser', across spellings and word breaks", async () => {
    expect((await found({ q: "pdf summariser" }))[0]).toBe("pdf-summarizer");
    expect((await found({ q: "PDF Summarizer" }))[0]).toBe("pdf-summarizer");
  });

  it("matches a prefix of a word", async () => {
    const summ = await found({ q: "summ" });
    expect(summ[0]).toBe("pdf-summarizer");
    // A description's "summary" is found by its prefix too, below the name.
    expect(summ).toContain("meeting-notes");
  });

  it("matches by stem", async () => {
    expect(await found({ q: "merge" })).toEqual(["pdf-tools"]);
  });

  it("finds a misspelt name", async () => {
    expect((await found({ q: "pdf-sumarizer" }))[0]).toBe("pdf-summarizer");
    expect(await found({ q: "lantren" })).toContain("lantern");
  });

  it("ranks a name above a tag above a description", async () => {
    const order = await found({ q: "lantern" });
    expect(order[0]).toBe("lantern");
    expect(order.filter((name) => ["lantern", "lamp-kit", "torch"].includes(name))).toEqual(["lantern", "lamp-kit", "torch"]);
  });

  it("narrows to one entry type", async () => {
    expect(await found({ q: "lantern", entryType: "agent" })).toEqual(["lantern-guide"]);
    expect(await found({ q: "lantern", entryType: "skill" })).not.toContain("lantern-guide");
    expect(await found({ q: "lantern", entryType: "nothing-of-this-type" })).toEqual([]);
  });

  it("answers the latest version of each name, matching only its text", async () => {
    const result = await client.call({ q: "chameleon" });
    expect(result.body.entries.map((entry: EntryJson) => entry.version)).toEqual(["2.0.0"]);
    expect(await found({ q: "xylophone" })).toEqual([]);
  });

  it("follows the latest version when the newest is yanked", async () => {
    const result = await client.call({ q: "hydra" });
    expect(result.body.entries.map((entry: EntryJson) => entry.version)).toEqual(["1.0.0"]);
    expect(await found({ q: "second" })).toEqual([]);
  });

  it("shows active and deprecated versions only", async () => {
    const result = await client.call({ q: "beacon" });
    expect(names(result).sort()).toEqual(["beacon-active", "beacon-deprecated"]);
    expect(result.body.entries.find((entry: EntryJson) => nameOf(entry) === "beacon-deprecated").status).toBe("deprecated");
  });

  it("pages through every match exactly once, in the order of one large page", async () => {
    const whole = await client.call({ q: "pageable", limit: 100 });
    expect(whole.body.entries).toHaveLength(100);
    const seen = await walk(async (cursor) => (await client.call({ q: "pageable", limit: 7, cursor })).body, 7);
    const walked = seen.map(nameOf);
    expect(walked).toHaveLength(PAGED);
    expect(new Set(walked).size).toBe(PAGED);
    expect(walked.slice(0, 100)).toEqual(names(whole));
    // All match in their tag, one tier, so the newest comes first: the reverse of publication.
    expect(walked).toEqual(Array.from({ length: PAGED }, (_, i) => `item-${PAGED - 1 - i}`));
  });

  it("pages 20 by default and at most 100", async () => {
    const first = await client.call({ q: "pageable" });
    expect(first.body.entries).toHaveLength(20);
    expect(first.body.nextCursor).toBeTruthy();
    expect((await client.call({ q: "pageable", limit: 1000 })).body.entries).toHaveLength(100);
  });

  it("refuses an empty q, a negative limit and a foreign or broken cursor, naming the field", async () => {
    for (const q of ["", "   ", "--- !!!"]) {
      const empty = await client.call({ q });
      expect([empty.code, empty.fields]).toEqual(["invalid_argument", ["q"]]);
    }
    const limit = await client.call({ q: "pdf", limit: -1 });
    expect([limit.code, limit.fields]).toEqual(["invalid_argument", ["limit"]]);
    const broken = await client.call({ q: "pdf", cursor: "not-a-cursor" });
    expect([broken.code, broken.fields]).toEqual(["invalid_argument", ["cursor"]]);
    const other = (await client.call({ q: "pageable", limit: 1 })).body.nextCursor;
    const foreign = await client.call({ q: "pdf", cursor: other });
    expect([foreign.code, foreign.fields]).toEqual(["invalid_argument", ["cursor"]]);
    const both = await client.call({ q: "", limit: -1 });
    expect(new Set(both.fields)).toEqual(new Set(["q", "limit"]));
  });

  it("treats injection-looking text as words", async () => {
    for (const q of ["'; drop table entries; --", "pdf:* | !x & (", "pdf' or '1'='1", "\\x00 %_ $1 ?"]) {
      const result = await client.call({ q });
      expect(result.code, `${q}: ${result.message}`).toBe("ok");
    }
    expect((await found({ q: "pdf' --" })).sort()).toEqual(["pdf-summarizer", "pdf-tools"]);
    expect(await found({ q: "lantern", entryType: "' or 1=1 --" })).toEqual([]);
    expect((await found({ q: "pdf summariser" }))[0]).toBe("pdf-summarizer");
  });
});

describe("search over REST only", () => {
  it("answers with a validator and asks caches to revalidate", async () => {
    const response = await fetch(`${registry.url}/v1/search?q=pdf`);
    expect(response.headers.get("cache-control")).toBe("no-cache");
    const again = await fetch(`${registry.url}/v1/search?q=pdf`, { headers: { "if-none-match": response.headers.get("etag")! } });
    expect(again.status).toBe(304);
  });

  it("names a limit that is not a number", async () => {
    const response = await fetch(`${registry.url}/v1/search?q=pdf&limit=abc`);
    expect(response.status).toBe(400);
    expect(JSON.stringify(await response.json())).toContain("limit");
  });

  it("refuses q with a NUL character", async () => {
    const result = await searchClient("rest").call({ q: "pdf\u0000" });
    expect([result.code, result.fields]).toEqual(["invalid_argument", ["q"]]);
  });

  it("keeps a name through deprecating and lifting it, drops it when yanked, and finds it again when unyanked", async () => {
    const did = "did:reg:main:skill:weathervane@1.0.0";
    await publish("weathervane", "1.0.0", { description: "Points where the wind blows" });
    const statuses = async () => {
      const result = await searchClient("rest").call({ q: "weathervane" });
      return result.body.entries.map((entry: EntryJson) => `${entry.entryDid} ${entry.status}`);
    };
    expect(await statuses()).toEqual([`${did} active`]);
    const steps: Array<[string, string[]]> = [
      ["deprecate", [`${did} deprecated`]],
      ["undeprecate", [`${did} active`]],
      ["yank", []],
      ["unyank", [`${did} active`]],
    ];
    for (const [action, expected] of steps) {
      await lifecycle(did, action);
      expect(await statuses(), action).toEqual(expected);
    }
    // Found by its text too, not only by its name: the row was kept whole.
    expect((await searchClient("rest").call({ q: "wind" })).body.entries.map((entry: EntryJson) => entry.entryDid)).toEqual([did]);
  });
});

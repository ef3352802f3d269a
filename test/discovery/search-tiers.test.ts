import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEXT_WALK_ROWS_PER_ROW } from "../../src/discovery/search-sql.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { send, walk, type EntryJson } from "./discovery-fixture.js";

/**
 * Search's tiers through the running server over REST (src/discovery/search-sql.ts): with more
 * rows than a small page's walk covers, so the sparse tiers (found through their indexes) and the
 * dense ones (walked) both answer, and pages of any size walk the same documented order.
 */

let db: TestDatabase;
let registry: TestRegistry;
let publisher: TestPublisher;
let token: string;

/** Unrelated entries between the old matches and the new, more than a page of 1 walks (2 rows). */
const FILLER = 2 * TEXT_WALK_ROWS_PER_ROW + 20;

async function publish(name: string, fields: Record<string, unknown> = {}): Promise<void> {
  const entry = await publisher.entry(name, "1.0.0", { tags: [], description: "", ...fields });
  const response = await send(registry, "POST", "/v1/entries", entry, token);
  expect(response.status, await response.clone().text()).toBe(201);
}

/** Oldest first: the order the entries are published in. */
const EXACT = "quokka";
const NAME_MATCHES = ["quokka-island", "rottnest-quokka", "quokka-photos"];
const MISSPELT = ["quoka-tools"];
const TAG_MATCHES = ["marsupial-guide", "island-fauna"];
const DESCRIPTION_MATCHES = Array.from({ length: 24 }, (_, i) => `wildlife-note-${i}`);

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database);
  publisher = await createPublisher();
  token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
  await publish(EXACT, { description: "The small one" });
  for (const name of NAME_MATCHES) await publish(name, { description: "Pictures" });
  for (const name of MISSPELT) await publish(name, { description: "Tools" });
  for (const name of TAG_MATCHES) await publish(name, { tags: ["quokka"], description: "Animals" });
  for (let i = 0; i < FILLER; i++) await publish(`filler-${i}`, { description: "Nothing to see" });
  for (const name of DESCRIPTION_MATCHES) await publish(name, { description: "Spotted a quokka today" });
}, 240_000);
afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

async function search(q: string, limit: number, cursor = ""): Promise<{ entries: EntryJson[]; nextCursor?: string }> {
  const query = new URLSearchParams({ q, limit: String(limit), ...(cursor === "" ? {} : { cursor }) });
  const response = await fetch(`${registry.url}/v1/search?${query}`);
  expect(response.status, await response.clone().text()).toBe(200);
  return (await response.json()) as { entries: EntryJson[]; nextCursor?: string };
}

const nameOf = (entry: EntryJson): string => entry.entryDid.split(":").at(-1).split("@")[0];

/** The documented order: by tier, and within a tier the newest first. */
const EXPECTED = [
  EXACT,
  ...[...NAME_MATCHES].reverse(),
  ...[...MISSPELT].reverse(),
  ...[...TAG_MATCHES].reverse(),
  ...[...DESCRIPTION_MATCHES].reverse(),
];

describe("search tiers", () => {
  it("ranks the exact name first among many description matches, then name, spelling, tag and description", async () => {
    const first = await search("quokka", 100);
    expect(first.entries.map(nameOf)).toEqual(EXPECTED);
    expect(first.nextCursor).toBeUndefined();
  });

  it("walks every page of every size once each, in the same order", async () => {
    for (const size of [1, 2, 5, 7]) {
      const walked = (await walk((cursor) => search("Quokka", size, cursor), size)).map(nameOf);
      expect(walked, `pages of ${size}`).toEqual(EXPECTED);
    }
  });

  it("pages a dense tier walked from the newest without repeats or gaps", async () => {
    const walked = (await walk((cursor) => search("spotted today", 3, cursor), 3)).map(nameOf);
    expect(walked).toEqual([...DESCRIPTION_MATCHES].reverse());
  });
});

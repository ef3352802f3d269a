import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRegistryClient } from "../../src/sdk/index.js";
import { createRegistryClient as createNodeClient } from "../../src/sdk/node.js";
import { childEnv, runCli, temporaryDirectory } from "../support/child-processes.js";
import { createPublisher, startTestRegistry, type TestRegistry } from "../support/registry-fixture.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { send } from "./discovery-fixture.js";

/** The SDK's search() on every transport, and `registry search` as a process, against a running registry. */

/** Each CLI run is a node process compiling TypeScript as it starts: seconds on a busy machine. */
const CLI_CASE_MS = 120_000;

let db: TestDatabase;
let registry: TestRegistry;
let scratch: { path: string; remove(): Promise<void> };

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database);
  scratch = await temporaryDirectory("search-cli-");
  const publisher = await createPublisher();
  const token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
  const seeds = [
    ["pdf-summarizer", ["pdf"], "Summarises PDF documents"],
    ["pdf-tools", ["pdf"], "Merges PDF files"],
    ["weather", ["forecast"], "Weather for a PDF-free world"],
  ] as const;
  for (const [name, tags, description] of seeds) {
    const entry = await publisher.entry(name, "1.0.0", { tags, description });
    expect((await send(registry, "POST", "/v1/entries", entry, token)).status).toBe(201);
  }
});
afterAll(async () => {
  await registry?.close();
  await db?.drop();
  await scratch?.remove();
});

describe("the SDK's search()", () => {
  it("answers a ranked page and a cursor to the next on every transport", async () => {
    const clients = [
      createRegistryClient({ baseUrl: registry.url, transport: "connect" }),
      createRegistryClient({ baseUrl: registry.url, transport: "grpc-web" }),
      createNodeClient({ baseUrl: registry.url, transport: "grpc" }),
    ];
    for (const client of clients) {
      const first = await client.search("pdf summariser", { pageSize: 1 });
      expect(first.entries.map((entry) => entry.entryDid)).toEqual(["did:reg:main:skill:pdf-summarizer@1.0.0"]);
      const rest = await client.search("pdf", { pageSize: 10 });
      expect(rest.nextCursor).toBeUndefined();
      expect(rest.entries).toHaveLength(3);
      const typed = await client.search("pdf", { entryType: "agent" });
      expect(typed.entries).toEqual([]);
      await expect(client.search(" ")).rejects.toMatchObject({ code: "invalid_argument" });
      client.close();
    }
  });
});

describe("registry search", () => {
  const env = () => childEnv({ REGISTRY_URL: registry.url, REGISTRY_CONFIG_DIR: join(scratch.path, "config") });

  it(
    "prints the best match first, and --json in the API's member names",
    async () => {
      const human = await runCli(["search", "pdf-sumarizer"], env());
      expect(human.code, human.stderr).toBe(0);
      expect(human.stdout.split("\n")[0]).toBe("did:reg:main:skill:pdf-summarizer@1.0.0\tactive\tSummarises PDF documents");

      const paged = await runCli(["search", "pdf", "--limit", "1", "--json"], env());
      expect(paged.code, paged.stderr).toBe(0);
      const page = JSON.parse(paged.stdout);
      expect(Object.keys(page).sort()).toEqual(["entries", "nextCursor"]);
      expect(page.entries).toHaveLength(1);

      const all = JSON.parse((await runCli(["search", "pdf", "--all", "--page-size", "2", "--json"], env())).stdout);
      expect(all.entries.map((entry: { entryDid: string }) => entry.entryDid)).toHaveLength(3);
      expect(all.nextCursor).toBeUndefined();

      const empty = await runCli(["search", "  "], env());
      expect(empty.code).not.toBe(0);
      expect(empty.stderr).toMatch(/\bq\b/);
    },
    CLI_CASE_MS,
  );
});

import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registryClient } from "../support/protocol-clients.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";

/** The project's own buf, against the full server: reflection and health make it work with no proto files. */

const run = promisify(execFile);
const BUF = fileURLToPath(new URL("../../node_modules/.bin/buf", import.meta.url));
const BUF_MS = 60_000;

let db: TestDatabase;
let registry: TestRegistry;
let publisher: TestPublisher;
let published: Record<string, any>;

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database);
  publisher = await createPublisher();
  const token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
  const client = registryClient("rest", registry.url);
  const created = await client.create(await publisher.entry("buf-curl", "1.4.2"), token);
  expect(created.code, created.message).toBe("ok");
  published = created.body;
});

afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

function bufCurl(...args: string[]) {
  return run(BUF, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", ...args], { timeout: BUF_MS });
}

describe("buf curl against the running registry", () => {
  it(
    "lists the registry, token and health methods through reflection",
    async () => {
      const { stdout } = await bufCurl("--list-methods", registry.url);
      const methods = stdout.split("\n").map((line) => line.trim());
      expect(methods).toContain("registry.v1.RegistryService/ResolveEntry");
      expect(methods).toContain("registry.v1.RegistryService/CreateEntry");
      expect(methods).toContain("auth.v1.TokenService/IssueToken");
      expect(methods).toContain("grpc.health.v1.Health/Check");
    },
    BUF_MS,
  );

  it(
    "resolves the published entry",
    async () => {
      const did = "did:reg:main:skill:buf-curl";
      const { stdout } = await bufCurl("-d", JSON.stringify({ did }), `${registry.url}/registry.v1.RegistryService/ResolveEntry`);
      const { entry } = JSON.parse(stdout);
      expect(entry.entryDid).toBe(`${did}@1.4.2`);
      expect(entry).toMatchObject({
        version: "1.4.2",
        publisherDid: publisher.did,
        status: "active",
        isLatest: true,
        sequence: published.sequence,
        signature: published.signature,
      });
    },
    BUF_MS,
  );

  it(
    "reports the server as SERVING on Health/Check",
    async () => {
      const { stdout } = await bufCurl("-d", '{"service":"registry.v1.RegistryService"}', `${registry.url}/grpc.health.v1.Health/Check`);
      expect(JSON.parse(stdout)).toEqual({ status: "SERVING" });
    },
    BUF_MS,
  );

  it(
    "gets the gRPC status of a failure: not_found for an unknown entry",
    async () => {
      const call = bufCurl(
        "-d",
        '{"did":"did:reg:main:skill:nobody-published-this"}',
        `${registry.url}/registry.v1.RegistryService/ResolveEntry`,
      );
      await expect(call).rejects.toMatchObject({ stderr: expect.stringMatching(/not[_ ]found/i) });
    },
    BUF_MS,
  );

  it(
    "gets unauthenticated for a create without a token",
    async () => {
      const entry = await publisher.entry("buf-curl", "1.5.0");
      const call = bufCurl("-d", JSON.stringify({ entry }), `${registry.url}/registry.v1.RegistryService/CreateEntry`);
      await expect(call).rejects.toMatchObject({ stderr: expect.stringMatching(/unauthenticated/i) });
    },
    BUF_MS,
  );
});

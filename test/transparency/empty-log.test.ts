import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRegistry, type RunningRegistry } from "../../src/app.js";
import { loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/logger.js";
import { parseLogKey, verifyCheckpoint } from "../../src/sdk/log-verifier.js";
import { logKeyOf, mirrorDatabase, runMirrorCli } from "../mirror/mirror-fixture.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";

/**
 * A registry with no changes yet serves the signed checkpoint of the empty tree (size 0, root
 * SHA-256 of no bytes: RFC 9162 2.1.1) on GET /checkpoint and GetCheckpoint, which the SDK's
 * verifier and the mirror accept; and it logs no error for it.
 */

const EMPTY_ROOT = createHash("sha256").digest();

let db: TestDatabase;
let registry: RunningRegistry;
const logLines: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  const config = loadConfig({}, { port: 0, host: "127.0.0.1", rateLimitRps: 0, writeRateLimitRps: 0, tokenRateLimitRps: 0 });
  registry = await startRegistry(
    { ...config, authUrl: "http://registry.test" },
    { logger: createLogger((line) => logLines.push(line)), database: db.database },
  );
});

afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

describe("an empty log", () => {
  it("GET /checkpoint answers the signed checkpoint of the empty tree, every time, and logs no error", async () => {
    const logKey = parseLogKey(await logKeyOf(registry.url));
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`${registry.url}/checkpoint`);
      expect(response.status).toBe(200);
      const checkpoint = await verifyCheckpoint(await response.text(), logKey);
      expect(checkpoint.treeSize).toBe(0);
      expect(Buffer.from(checkpoint.rootHash)).toEqual(EMPTY_ROOT);
    }
    const errors = logLines.filter((line) => (JSON.parse(line) as { level: string }).level === "error");
    expect(errors).toEqual([]);
  });

  it("GetCheckpoint answers the same note", async () => {
    const note = await (await fetch(`${registry.url}/checkpoint`)).text();
    const response = await fetch(`${registry.url}/v1/log/checkpoint`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { checkpoint: string; treeSize: string; rootHash: string };
    expect(body).toEqual({ checkpoint: note, treeSize: "0", rootHash: EMPTY_ROOT.toString("base64") });
  });

  it("a mirror accepts it and copies nothing", async () => {
    const mirror = await mirrorDatabase();
    try {
      const result = await runMirrorCli(registry.url, ["--log-key", await logKeyOf(registry.url), "--once"], mirror);
      expect(result.code, result.stderr).toBe(0);
    } finally {
      await mirror.remove();
    }
  });
});

import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { encodePrivateKey, generateKeyPair } from "../../src/sdk/node.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { startTestRegistry, type TestRegistry } from "../support/registry-fixture.js";

const run = promisify(execFile);
const root = new URL("../../", import.meta.url);

let db: TestDatabase;
let registry: TestRegistry;
let workDir: string;

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database);
  workDir = await mkdtemp(join(tmpdir(), "sdk-example-"));
});

afterAll(async () => {
  await registry?.close();
  await db?.drop();
  if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
});

it("docs/sdk.md's example runs as written against a registry", async () => {
  const docs = await readFile(new URL("docs/sdk.md", root), "utf8");
  const example = /```js\n([\s\S]*?)```/.exec(docs)?.[1];
  expect(example).toContain('from "@open-registry/sdk"');
  // The package's dist/ may not be built; the example runs on the Node entry's source instead.
  const source = example!.replace('"@open-registry/sdk"', JSON.stringify(new URL("src/sdk/node.ts", root).href));
  await writeFile(join(workDir, "publish.mjs"), source);

  const key = await generateKeyPair();
  await writeFile(join(workDir, "publisher.json"), JSON.stringify({ did: key.did, privateKey: encodePrivateKey(key.privateKey) }));
  const rootToken = await registry.rootToken(key.did, ["registry.publish.skill"]);

  const tsx = new URL("node_modules/tsx/dist/esm/index.mjs", root).href;
  const { stdout } = await run(process.execPath, ["--import", tsx, "publish.mjs"], {
    cwd: workDir,
    env: { PATH: process.env.PATH, REGISTRY_URL: registry.url, ROOT: rootToken },
  });
  expect(stdout).toMatch(/^published did:reg:main:skill:sdk-example@1\.0\.\d+ sequence \d+n$/m);
  expect(stdout).toMatch(/^1\.0\.\d+ active$/m);
  expect(stdout).toMatch(/^found did:reg:main:skill:sdk-example@/m);
  expect(stdout).toMatch(/^row did:reg:main:skill:sdk-example@/m);
  expect(stdout).toMatch(/^invalid_argument \[\s+\{\s+field: 'did'/m);
});

import { execFile } from "node:child_process";
import { readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PROJECT_ROOT, temporaryDirectory } from "../support/child-processes.js";
import { walkthroughProgram } from "../support/openapi-walkthrough-program.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { startTestRegistry, type TestRegistry } from "../support/registry-fixture.js";

/**
 * A client generated from docs/openapi.json, as a client author makes one: openapi-typescript
 * writes the types, tsc type-checks the README walkthrough's REST calls made through openapi-fetch
 * with no casts, and the program runs them against a running server.
 */

const run = promisify(execFile);
const SDK = fileURLToPath(new URL("../../src/sdk/index.js", import.meta.url));

let db: TestDatabase;
let dataDir: { path: string; remove(): Promise<void> };
let scratch: { path: string; remove(): Promise<void> };
let registry: TestRegistry;

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await temporaryDirectory("registry-typed-client-data-");
  scratch = await temporaryDirectory("registry-typed-client-");
  // The admin API on, as on an embedded database by default: the walkthrough makes its root token through it.
  registry = await startTestRegistry(db.database, { adminApi: true, dataDir: dataDir.path });
  // The scratch project resolves openapi-fetch and @types/node from this repository's install.
  await symlink(join(PROJECT_ROOT, "node_modules"), join(scratch.path, "node_modules"), "dir");
});
afterAll(async () => {
  await registry?.close();
  await db?.drop();
  await dataDir?.remove();
  await scratch?.remove();
});

/** Runs a node script to completion, rejecting with its output when it fails. */
async function node(args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  try {
    const { stdout } = await run(process.execPath, args, { cwd: scratch.path, env, timeout: 90_000 });
    return stdout;
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`node ${args.join(" ")} failed:\n${stdout ?? ""}${stderr ?? ""}`);
  }
}

it("type-checks the walkthrough through openapi-fetch with the generated types, and runs it", async () => {
  await node([join(PROJECT_ROOT, "node_modules/openapi-typescript/bin/cli.js"), join(PROJECT_ROOT, "docs/openapi.json"), "-o", "api.d.ts"]);
  await writeFile(join(scratch.path, "walkthrough.ts"), walkthroughProgram(SDK));
  await writeFile(
    join(scratch.path, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        lib: ["ES2023", "DOM"],
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        noUncheckedIndexedAccess: true,
        noUnusedLocals: true,
        skipLibCheck: true,
        noEmit: true,
        types: ["node"],
      },
      files: ["walkthrough.ts"],
    }),
  );
  await writeFile(join(scratch.path, "package.json"), JSON.stringify({ type: "module", private: true }));
  await node([join(PROJECT_ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"]);

  const credential = (await readFile(join(dataDir.path, "admin-credential"), "utf8")).trim();
  const output = await node([join(PROJECT_ROOT, "bin/run-ts.js"), "walkthrough.ts"], {
    ...process.env,
    REGISTRY_URL: registry.url,
    REGISTRY_ADMIN_CREDENTIAL: credential,
  });
  const summary = JSON.parse(output.trim().split("\n").at(-1) ?? "{}");
  expect(summary).toMatchObject({ status: "revoked", total: 1, rows: 1 });
  expect(summary.sequence).toMatch(/^[0-9]+$/);
}, 180_000);

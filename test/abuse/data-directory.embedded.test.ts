import { execFile, spawnSync } from "node:child_process";
import { chmod, chown, lstat, mkdir, readdir, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/storage/database.js";
import {
  REGISTRY_BIN,
  childEnv,
  freePort,
  runCli,
  startServerProcess,
  temporaryDirectory,
  type ServerProcess,
} from "../support/child-processes.js";
import { createPublisher, type TestPublisher } from "../support/registry-fixture.js";

/**
 * The embedded database's directory holds the token issuer's private key, the log's signing key
 * and the cursor secret (in its tables and its WAL), and the admin credential. Another account on
 * the host must read none of it: not when the directory was made beforehand with mode 0755 (as
 * `mkdir -p` or a container volume makes it), not after tokens were issued and the WAL has grown,
 * not at rest, and not after an older build left its files readable. A directory that another
 * account owns is refused at start, with a message saying how to fix it. Always on an embedded
 * data directory: the children get no DATABASE_URL.
 */

const STARTUP_MS = 120_000;
/** Long enough to start and refuse; a server that starts instead is killed after it, and the test fails. */
const REFUSAL_MS = 60_000;
const GROUP_AND_OTHER_BITS = 0o077;
/** Another account to read and run as: only root can switch to it. */
const OTHER_ACCOUNT = "nobody";
const NOBODY_ID = 65534;
const canSwitchAccount =
  process.geteuid?.() === 0 &&
  spawnSync("runuser", ["-u", OTHER_ACCOUNT, "--", "id", "-u"], { encoding: "utf8" }).stdout?.trim() === String(NOBODY_ID) &&
  // It can run the CLI from this checkout (not so where the checkout is private to root).
  spawnSync("runuser", ["-u", OTHER_ACCOUNT, "--", process.execPath, REGISTRY_BIN, "--version"], {
    env: { ...process.env, HOME: tmpdir() },
  }).status === 0;

let parent: { path: string; remove(): Promise<void> };
let dataDir: string;
let port: number;
let env: NodeJS.ProcessEnv;
let server: ServerProcess | undefined;
let publisher: TestPublisher;
let published = 0;

beforeAll(async () => {
  parent = await temporaryDirectory("registry-data-modes-");
  // A parent anyone may pass through, as /var/lib or a home directory: only the data directory's
  // own modes stand between another account and the database.
  await chmod(parent.path, 0o755);
  dataDir = join(parent.path, "data");
  await mkdir(dataDir);
  await chmod(dataDir, 0o755);
  port = await freePort();
  env = childEnv({ REGISTRY_DATA_DIR: dataDir, PORT: String(port) });
  publisher = await createPublisher();
}, STARTUP_MS);

afterAll(async () => {
  await server?.stop().catch(() => {});
  await parent?.remove();
});

/** Every entry under `root` (links not followed), by its path under `root`, with its permission bits. */
async function modesUnder(root: string): Promise<Array<{ path: string; mode: number }>> {
  const entries = await readdir(root, { withFileTypes: true, recursive: true });
  return Promise.all(
    entries.map(async (entry) => {
      const path = join(entry.parentPath, entry.name);
      return { path: relative(root, path), mode: (await lstat(path)).mode & 0o777 };
    }),
  );
}

/** What another account could open: every entry with a group or other permission bit, as "path 0644". */
async function readableByOthers(): Promise<string[]> {
  const modes = await modesUnder(dataDir);
  expect(modes.length).toBeGreaterThan(100);
  return modes.filter(({ mode }) => (mode & GROUP_AND_OTHER_BITS) !== 0).map(({ path, mode }) => `${path} 0${mode.toString(8)}`);
}

async function expectPrivate(): Promise<void> {
  const directoryMode = ((await stat(dataDir)).mode & 0o777).toString(8);
  expect({ directoryMode, readableByOthers: await readableByOthers() }).toEqual({ directoryMode: "700", readableByOthers: [] });
}

/** The WAL segments and the admin credential: where the audit found the secrets. */
async function secretFiles(): Promise<string[]> {
  const wal = (await readdir(join(dataDir, "pg_wal"), { withFileTypes: true })).filter((entry) => entry.isFile());
  expect(wal.length).toBeGreaterThan(0);
  return [...wal.map((entry) => join(dataDir, "pg_wal", entry.name)), join(dataDir, "admin-credential")];
}

/** `registry serve` on `dataDir` as OTHER_ACCOUNT, run until it exits (or REFUSAL_MS have passed). */
function serveAsOtherAccount(dataDir: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { ...childEnv({ REGISTRY_DATA_DIR: dataDir, PORT: "0" }), HOME: tmpdir() };
  return new Promise((resolve) => {
    execFile(
      "runuser",
      ["-u", OTHER_ACCOUNT, "--", process.execPath, REGISTRY_BIN, "serve"],
      { env, timeout: REFUSAL_MS, killSignal: "SIGKILL" },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr }),
    );
  });
}

async function walSegments(): Promise<string[]> {
  return (await readdir(join(dataDir, "pg_wal"))).filter((name) => /^[0-9A-F]{24}$/.test(name));
}

/** `cat file` as OTHER_ACCOUNT, its output discarded: the exit status and what it said. */
function readAsOtherAccount(file: string): { status: number | null; stderr: string } {
  const result = spawnSync("runuser", ["-u", OTHER_ACCOUNT, "--", "cat", file], {
    stdio: ["ignore", "ignore", "pipe"],
    encoding: "utf8",
  });
  return { status: result.status, stderr: result.stderr };
}

/** A root token from the running server's admin API (the CLI), then `count` access tokens, each used to publish. */
async function issueTokens(count: number): Promise<void> {
  const created = await runCli(["root-token", "create", "--subject", publisher.did, "--scopes", "registry.publish.skill"], env, STARTUP_MS);
  expect(created.code, created.stderr).toBe(0);
  const rootToken = created.stdout.trim();
  for (let index = 0; index < count; index++)
    await publish(await post("/v1/tokens", rootToken, { scopes: ["registry.publish.skill"] }, 200));
}

/** A publish writes the entry and its log records: the WAL grows past what the start left. */
async function publish({ accessToken }: { accessToken?: string }): Promise<void> {
  await post("/v1/entries", accessToken!, await publisher.entry("data-modes", `1.0.${published++}`), 201);
}

async function post(route: string, token: string, body: unknown, status: number): Promise<Record<string, string>> {
  const response = await fetch(`${server!.url}${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  expect(response.status, text).toBe(status);
  return JSON.parse(text) as Record<string, string>;
}

describe("a data directory made beforehand with mode 0755", () => {
  it(
    "is 0700 with nothing in it open to group or others once the server has started",
    async () => {
      server = await startServerProcess([], port, env, STARTUP_MS);
      await expectPrivate();
    },
    STARTUP_MS,
  );

  it(
    "stays so after tokens were issued and entries published",
    async () => {
      await issueTokens(5);
      await expectPrivate();
    },
    STARTUP_MS,
  );

  it.skipIf(!canSwitchAccount)(`cannot be read as ${OTHER_ACCOUNT}`, async () => {
    // The control: the account can read what is open to it, so a refusal below is the modes' doing.
    const open = join(parent.path, "readable-by-anyone");
    await writeFile(open, "anyone\n", { mode: 0o644 });
    expect(readAsOtherAccount(open)).toEqual({ status: 0, stderr: "" });
    for (const file of await secretFiles()) {
      const read = readAsOtherAccount(file);
      expect(read.status, file).not.toBe(0);
      expect(read.stderr, file).toContain("Permission denied");
    }
  });

  it(
    "stays so at rest, after the server stopped",
    async () => {
      const stopped = await server!.stop();
      expect(stopped.code).toBe(0);
      server = undefined;
      await expectPrivate();
    },
    STARTUP_MS,
  );

  it(
    "stays so when the WAL moves on to new segments",
    async () => {
      // The CLI's way in (migrate, mirror) while no server runs: the same opening as the server's.
      const database = await openDatabase({ dataDir });
      try {
        const before = await walSegments();
        // A switch needs something written since the last one; a temporary table leaves nothing behind.
        for (let switches = 0; switches < 3; switches++) {
          await database.knex.raw(`create temporary table wal_filler_${switches} (x int)`);
          await database.knex.raw("select pg_switch_wal()");
        }
        expect((await walSegments()).filter((segment) => !before.includes(segment)).length).toBeGreaterThan(0);
        await expectPrivate();
      } finally {
        await database.close();
      }
      await expectPrivate();
    },
    STARTUP_MS,
  );

  it(
    "is made private again at start when an older build left its files readable",
    async () => {
      for (const { path, mode } of await modesUnder(dataDir)) await chmod(join(dataDir, path), mode | (mode >> 3) | (mode >> 6));
      await chmod(dataDir, 0o755);
      expect((await readableByOthers()).length).toBeGreaterThan(100);

      server = await startServerProcess([], port, env, STARTUP_MS);
      await expectPrivate();
      await issueTokens(1);
      await expectPrivate();
      await server.stop();
      server = undefined;
    },
    STARTUP_MS,
  );
});

describe.skipIf(!canSwitchAccount)("a data directory holding a file of another account's", () => {
  it(
    "is refused at start by a server that cannot change the file's modes, with a message that says how to fix it",
    async () => {
      const shared = join(parent.path, "holds-a-stray-file");
      await mkdir(shared, { mode: 0o700 });
      await chown(shared, NOBODY_ID, NOBODY_ID);
      const stray = join(shared, "stray");
      await writeFile(stray, "root's\n", { mode: 0o644 });
      const result = await serveAsOtherAccount(shared);
      expect(result.code, result.stdout).toBe(2);
      expect(result.stderr).toContain(`REGISTRY_DATA_DIR: cannot take group and other access off ${stray} (EPERM)`);
      expect(result.stderr).toContain(`chown -R ${NOBODY_ID} ${shared} && chmod -R go-rwx ${shared}`);
      expect(await readdir(shared)).toEqual(["stray"]);
    },
    STARTUP_MS,
  );
});

describe.skipIf(process.geteuid?.() !== 0)("a data directory another account owns", () => {
  it(
    "is refused at start, with a message that says how to fix it",
    async () => {
      const owned = join(parent.path, "owned-by-another");
      await mkdir(owned, { mode: 0o700 });
      await chown(owned, NOBODY_ID, NOBODY_ID);
      const ownedPort = await freePort();
      const result = await runCli(["serve"], childEnv({ REGISTRY_DATA_DIR: owned, PORT: String(ownedPort) }), REFUSAL_MS);
      expect(result.code, result.stdout).toBe(2);
      expect(result.stderr).toContain(`REGISTRY_DATA_DIR: ${owned} belongs to uid ${NOBODY_ID}, not to uid 0 that the registry runs as`);
      expect(result.stderr).toContain(`chown -R 0 ${owned}`);
      // Nothing was written into it, and its modes are as they were.
      expect(await readdir(owned)).toEqual([]);
      expect((await stat(owned)).mode & 0o777).toBe(0o700);
    },
    STARTUP_MS,
  );
});

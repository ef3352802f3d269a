import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { cp, readFile, readlink, rm, stat, utimes, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DatabaseInUseError, openDatabase } from "../../src/storage/database.js";
import { LOCK_FILE, UNREFRESHED_LOCK_STALE_MS, type LockHolder } from "../../src/storage/data-directory-lock.js";
import { childEnv, freePort, runCli, startServerProcess, type ServerProcess } from "../support/child-processes.js";
import { createPublisher, startTestRegistry } from "../support/registry-fixture.js";
import { scratchDirectory } from "../support/scratch-directories.js";
import { seededDataDirectory } from "../support/test-database.js";

/**
 * A data directory copied while its server is stopped starts elsewhere (docs/operations.md,
 * "Backups and restore"), whatever lock it carries: one a killed server left, one taken on another
 * machine, one naming a pid that now belongs to an unrelated live process, an older build's bare
 * pid. A live holder is still refused, and the refusal names it. The children run on the embedded
 * database (no DATABASE_URL); the lock's checks of pid start times and namespaces are Linux's.
 */

const STARTUP_MS = 120_000;
/** The public URL every server here answers as: the log's origin and the tokens' issuer derive from it. */
const PUBLIC_URL = "http://registry.backup.test";
const NAMES = ["web-search", "summarize"] as const;

let original: { path: string; remove(): Promise<void> };
let copy: { path: string; remove(): Promise<void> };
let server: ServerProcess | undefined;
/** What the original server answered before it was killed, by route. */
const before = new Map<string, string>();
let killedPid: number;

const ROUTES = [
  ...NAMES.map((name) => `/v1/entries/did:reg:main:skill:${name}@1.0.0`),
  "/v1/log/checkpoint",
  "/v1/log/key",
  "/.well-known/jwks.json",
];

function serverEnv(dataDir: string, port: number): NodeJS.ProcessEnv {
  return childEnv({ REGISTRY_DATA_DIR: dataDir, PORT: String(port), PUBLIC_URL });
}

async function text(url: string): Promise<string> {
  const response = await fetch(url);
  const body = await response.text();
  expect(response.status, `${url}: ${body}`).toBe(200);
  return body;
}

async function post(url: string, token: string, body: unknown): Promise<Record<string, string>> {
  const response = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = await response.text();
  expect(response.status, answer).toBeLessThan(300);
  return JSON.parse(answer) as Record<string, string>;
}

/** Waits until the log's checkpoint covers every record, so the copy holds a signed tree of all of them. */
async function checkpointOf(url: string, size: number): Promise<void> {
  for (let attempt = 0; attempt < 400; attempt++) {
    const body = JSON.parse(await text(`${url}/v1/log/checkpoint`)) as { treeSize: string };
    if (body.treeSize === String(size)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no checkpoint of size ${size}`);
}

async function expectSameAnswers(url: string): Promise<void> {
  for (const route of ROUTES) expect(await text(`${url}${route}`), route).toBe(before.get(route));
}

async function writeLock(dataDir: string, content: string): Promise<void> {
  await writeFile(join(dataDir, LOCK_FILE), content, { mode: 0o600 });
}

/** This machine and pid namespace, as a lock taken here names them. */
async function here(): Promise<Pick<LockHolder, "hostname" | "bootId" | "pidNamespace">> {
  return {
    hostname: hostname(),
    bootId: (await readFile("/proc/sys/kernel/random/boot_id", "utf8")).trim(),
    pidNamespace: await readlink("/proc/self/ns/pid"),
  };
}

async function startTicksOf(pid: number): Promise<string> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]!;
}

/** A pid no process has: one that ran and exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((resolve) => child.once("exit", resolve));
  return child.pid!;
}

/** Opens the copy in this process, as the CLI's commands do, serves it, and shows it answers as the original did. */
async function expectServesTheCopy(): Promise<void> {
  const database = await openDatabase({ dataDir: copy.path });
  try {
    const registry = await startTestRegistry(database, { publicUrl: PUBLIC_URL, logOrigin: "registry.backup.test/log" });
    try {
      await expectSameAnswers(registry.url);
    } finally {
      await registry.close();
    }
  } finally {
    await database.close();
  }
  await expect(stat(join(copy.path, LOCK_FILE))).rejects.toThrow(/ENOENT/);
}

async function expectRefused(pattern: RegExp): Promise<void> {
  const lock = await readFile(join(copy.path, LOCK_FILE), "utf8");
  const opened = openDatabase({ dataDir: copy.path });
  // Opened after all, it is closed, so that the tests after this one start from a released directory.
  opened.then((database) => database.close()).catch(() => {});
  await expect(opened).rejects.toThrow(DatabaseInUseError);
  await expect(opened).rejects.toThrow(pattern);
  expect(await readFile(join(copy.path, LOCK_FILE), "utf8")).toBe(lock);
}

beforeAll(async () => {
  original = await seededDataDirectory("registry-original-");
  copy = await scratchDirectory("registry-copy-");
  const port = await freePort();
  server = await startServerProcess([], port, serverEnv(original.path, port), STARTUP_MS);
  const credential = (await readFile(join(original.path, "admin-credential"), "utf8")).trim();
  const publisher = await createPublisher();
  const scopes = ["registry.publish.skill"];
  const { token: rootToken } = await post(`${server.url}/v1/admin/root-tokens`, credential, { subject: publisher.did, scopes });
  const { accessToken } = await post(`${server.url}/v1/tokens`, rootToken!, { scopes });
  for (const name of NAMES) await post(`${server.url}/v1/entries`, accessToken!, await publisher.entry(name, "1.0.0"));
  await checkpointOf(server.url, NAMES.length);
  for (const route of ROUTES) before.set(route, await text(`${server.url}${route}`));
  // Killed, as by the OOM killer or a power cut: its lock stays behind.
  killedPid = server.child.pid!;
  server.child.kill("SIGKILL");
  await server.stop();
  server = undefined;
  await cp(original.path, copy.path, { recursive: true, preserveTimestamps: true });
}, STARTUP_MS);

afterAll(async () => {
  await server?.stop().catch(() => {});
  await original?.remove();
  await copy?.remove();
});

describe("a data directory copied after its server was killed", () => {
  it("carries the killed server's lock, naming its pid, host and start", async () => {
    const holder = JSON.parse(await readFile(join(copy.path, LOCK_FILE), "utf8")) as LockHolder;
    expect(holder).toMatchObject({ pid: killedPid, hostname: hostname() });
    if (process.platform === "linux") expect(holder).toMatchObject({ ...(await here()), startTicks: expect.stringMatching(/^\d+$/) });
  });

  it(
    "starts a server that serves the same entries, log and keys; a second server on it is refused, naming the first",
    async () => {
      const port = await freePort();
      server = await startServerProcess([], port, serverEnv(copy.path, port), STARTUP_MS);
      await expectSameAnswers(server.url);
      const takeover = (await server.logLines("took over the data directory's stale lock")).map(
        (line) => JSON.parse(line) as { holder: LockHolder; reason: string },
      );
      expect(takeover).toMatchObject([{ holder: { pid: killedPid }, reason: "its process no longer runs" }]);

      const second = await runCli(["serve"], serverEnv(copy.path, await freePort()), STARTUP_MS);
      expect(second.code, second.stdout).toBe(2);
      expect(second.stderr).toContain(
        `the embedded database in ${copy.path} is in use by process ${server.child.pid} on ${hostname()} since `,
      );
      expect(second.stderr).toContain(`lock file ${join(copy.path, LOCK_FILE)}`);
      // The refused server left the live lock alone.
      expect(JSON.parse(await readFile(join(copy.path, LOCK_FILE), "utf8"))).toMatchObject({ pid: server.child.pid });
      await expectSameAnswers(server.url);

      const stopped = await server.stop();
      server = undefined;
      expect(stopped.code).toBe(0);
      await expect(stat(join(copy.path, LOCK_FILE))).rejects.toThrow(/ENOENT/);
    },
    STARTUP_MS,
  );
});

describe.skipIf(process.platform !== "linux")("a copied directory whose lock names a process that cannot be its holder", () => {
  it("starts when the lock was taken on another machine, even naming a pid alive here", async () => {
    const lock: LockHolder = {
      pid: process.pid,
      hostname: "elsewhere",
      bootId: randomUUID(),
      startTicks: "1",
      since: "2026-01-01T00:00:00.000Z",
    };
    await writeLock(copy.path, JSON.stringify(lock));
    await expectServesTheCopy();
  });

  it("starts when the lock names pid 1, alive, but with another start time (the previous container's server)", async () => {
    const startTicks = String(Number(await startTicksOf(1)) + 1);
    await writeLock(copy.path, JSON.stringify({ pid: 1, ...(await here()), startTicks }));
    await expectServesTheCopy();
  });

  it("starts when the lock names this test's parent, alive, but with another start time (a reused pid)", async () => {
    const startTicks = String(Number(await startTicksOf(process.ppid)) + 1);
    await writeLock(copy.path, JSON.stringify({ pid: process.ppid, ...(await here()), startTicks }));
    await expectServesTheCopy();
  });

  it("starts on an older build's bare pid of a process that no longer runs", async () => {
    await writeLock(copy.path, `${await deadPid()}\n`);
    await expectServesTheCopy();
  });

  it("starts on an older build's bare pid naming its parent (pid 1 of a restarted container, the server under an init)", async () => {
    await writeLock(copy.path, `${process.ppid}\n`);
    await expectServesTheCopy();
  });

  it("starts when the lock comes from another pid namespace and was not refreshed for a while", async () => {
    await writeLock(copy.path, JSON.stringify({ pid: 1, ...(await here()), pidNamespace: "pid:[1]", startTicks: "1" }));
    const unrefreshed = new Date(Date.now() - UNREFRESHED_LOCK_STALE_MS - 5_000);
    await utimes(join(copy.path, LOCK_FILE), unrefreshed, unrefreshed);
    await expectServesTheCopy();
  });
});

describe.skipIf(process.platform !== "linux")("a copied directory whose lock may name a live holder", () => {
  it("is refused when the lock names a live process with its own start time, naming it", async () => {
    const holder = {
      pid: process.ppid,
      ...(await here()),
      startTicks: await startTicksOf(process.ppid),
      since: "2026-01-02T03:04:05.000Z",
    };
    await writeLock(copy.path, JSON.stringify(holder));
    await expectRefused(new RegExp(`is in use by process ${process.ppid} on ${hostname()} since 2026-01-02T03:04:05.000Z \\(running;`));
  });

  it("is refused on an older build's bare pid of a live process", async () => {
    await writeLock(copy.path, "1\n");
    await expectRefused(/is in use by process 1 \(running; an older build's lock, which names the pid alone; lock file /);
  });

  it("is refused when the lock comes from another pid namespace and was refreshed just now", async () => {
    await writeLock(copy.path, JSON.stringify({ pid: 1, ...(await here()), pidNamespace: "pid:[1]", startTicks: "1" }));
    await expectRefused(/is in use by process 1 on .* \(in another pid namespace \(another container on this machine\)/);
  });

  it("is refused when this very process holds it", async () => {
    await rm(join(copy.path, LOCK_FILE));
    const database = await openDatabase({ dataDir: copy.path });
    try {
      await expect(openDatabase({ dataDir: copy.path })).rejects.toThrow(/is in use by process \d+ .*\(this very process;/);
    } finally {
      await database.close();
    }
  });
});

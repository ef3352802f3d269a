import { randomBytes } from "node:crypto";
import type { Stats } from "node:fs";
import { type FileHandle, link, open, readFile, readlink, realpath, rename, rm, stat } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";

/**
 * PGlite is one process's database: a second process opening the same directory would corrupt it.
 * A lock file, `registry.lock`, names the process that holds the directory, precisely enough that a
 * later start can tell whether that process still runs. A directory copied while its server was
 * stopped, or left by a server that was killed, carries a lock of a process that is gone; it must
 * not block, even when the same pid now names another process (pid 1 of the next container).
 */

export const LOCK_FILE = "registry.lock";

/** How often a holder refreshes its lock's modification time. */
const HEARTBEAT_MS = 5_000;

/**
 * A lock from another pid namespace on this machine (another container) names a pid this process
 * cannot look up: it is stale once its holder has not refreshed it for this long.
 */
export const UNREFRESHED_LOCK_STALE_MS = 30_000;

/** Who holds a data directory, as its lock file says (JSON; an older build wrote the bare pid). */
export interface LockHolder {
  readonly pid: number;
  readonly hostname?: string;
  /** The kernel's boot id (Linux): a process of another boot, or of another machine, is not running. */
  readonly bootId?: string;
  /** The pid namespace the pid counts in (Linux): outside it, the same number names another process. */
  readonly pidNamespace?: string;
  /** Its start, in clock ticks after boot (Linux, /proc/<pid>/stat): a process that reuses the pid has another. */
  readonly startTicks?: string;
  /** When it took the lock. */
  readonly since?: string;
}

export class DatabaseInUseError extends Error {}

/** Directories this process holds, by real path: a second opening here is refused like any other. */
const heldHere = new Set<string>();

/** Told when a stale lock was taken over: whose it was, and why it was judged stale. */
export type StaleLockReport = (holder: LockHolder, reason: string) => void;

/**
 * Takes `dataDir`'s lock, taking over a stale one (told to `onStaleLock`); resolves to its
 * release. Throws DatabaseInUseError, naming the holder, when a live process holds it.
 */
export async function lockDataDirectory(dataDir: string, onStaleLock?: StaleLockReport): Promise<() => Promise<void>> {
  const lockPath = join(dataDir, LOCK_FILE);
  const directory = await realpath(dataDir);
  if (heldHere.has(directory)) throw inUse(dataDir, await thisProcess(), "this very process");
  const holder = await thisProcess();
  for (let attempt = 0; attempt < 3; attempt++) {
    const handle = await create(lockPath, holder);
    if (handle !== undefined) return held(directory, lockPath, handle);
    const found = await readLock(lockPath);
    if (found === undefined) continue;
    const verdict = await judge(found.holder, found.stats, holder);
    if (verdict.live) throw inUse(dataDir, found.holder, verdict.reason);
    await removeStale(lockPath, found.stats);
    onStaleLock?.(found.holder, verdict.reason);
  }
  throw new DatabaseInUseError(`cannot lock the embedded database in ${dataDir}: other processes keep taking its ${LOCK_FILE}`);
}

/**
 * Creates the lock with its content in one step (a link of a file already written), so a reader
 * never sees it empty; undefined when a lock exists. The handle stays open for the heartbeat.
 */
async function create(lockPath: string, holder: LockHolder): Promise<FileHandle | undefined> {
  const staging = `${lockPath}.${process.pid}.${randomBytes(4).toString("hex")}`;
  const handle = await open(staging, "wx", 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(holder)}\n`);
    await handle.sync();
    await link(staging, lockPath);
    return handle;
  } catch (error) {
    await handle.close();
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return undefined;
    throw error;
  } finally {
    await rm(staging, { force: true });
  }
}

function held(directory: string, lockPath: string, handle: FileHandle): () => Promise<void> {
  heldHere.add(directory);
  // Through the handle: a lock another process has since taken over is a new file, left alone.
  const heartbeat = setInterval(() => {
    const now = new Date();
    handle.utimes(now, now).catch(() => {});
  }, HEARTBEAT_MS);
  heartbeat.unref();
  let released: Promise<void> | undefined;
  return () => {
    released ??= (async () => {
      clearInterval(heartbeat);
      const mine = await handle.stat();
      await handle.close();
      const current = await stat(lockPath).catch(() => undefined);
      if (current !== undefined && sameFile(current, mine)) await rm(lockPath, { force: true });
      heldHere.delete(directory);
    })();
    return released;
  };
}

/** The lock's holder and file, or undefined when it vanished while being read. */
async function readLock(lockPath: string): Promise<{ holder: LockHolder; stats: Stats } | undefined> {
  try {
    const stats = await stat(lockPath);
    return { holder: parseLock(await readFile(lockPath, "utf8")), stats };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** A lock's text: this build's JSON, or an older build's bare pid; anything else holds nothing (pid 0). */
export function parseLock(text: string): LockHolder {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return { pid: Number(trimmed) };
  try {
    const value = JSON.parse(trimmed) as Record<string, unknown>;
    if (!Number.isSafeInteger(value.pid) || (value.pid as number) <= 0) return { pid: 0 };
    const text = (name: keyof LockHolder) => (typeof value[name] === "string" ? (value[name] as string) : undefined);
    return {
      pid: value.pid as number,
      hostname: text("hostname"),
      bootId: text("bootId"),
      pidNamespace: text("pidNamespace"),
      startTicks: text("startTicks"),
      since: text("since"),
    };
  } catch {
    return { pid: 0 };
  }
}

/** Whether the holder may still run, and why: the reason names a live holder, or why a lock is stale. */
type Verdict = { readonly live: boolean; readonly reason: string };

/** Whether the lock's holder may still run, as seen from `self` (this process). */
async function judge(holder: LockHolder, stats: Stats, self: LockHolder): Promise<Verdict> {
  if (holder.pid <= 0) return { live: false, reason: "it names no process" };
  if (holder.bootId !== undefined && self.bootId !== undefined) {
    // Another boot: this machine restarted since, or the directory comes from another machine.
    if (holder.bootId !== self.bootId)
      return { live: false, reason: "it was taken before this machine last booted, or on another machine" };
  } else if (holder.hostname !== undefined && holder.hostname !== self.hostname) {
    return { live: false, reason: `it was taken on another host, ${holder.hostname}` };
  }
  if (holder.pidNamespace !== undefined && self.pidNamespace !== undefined && holder.pidNamespace !== self.pidNamespace) {
    const ageMs = Date.now() - stats.mtimeMs;
    if (ageMs >= UNREFRESHED_LOCK_STALE_MS) {
      return { live: false, reason: `it comes from another pid namespace and was not refreshed for ${Math.round(ageMs / 1000)} s` };
    }
    return {
      live: true,
      reason:
        `in another pid namespace (another container on this machine), so not visible from here; its lock was refreshed ` +
        `${Math.round(ageMs / 1000)} s ago, and one left unrefreshed for ${UNREFRESHED_LOCK_STALE_MS / 1000} s is taken over`,
    };
  }
  // Not this process (checked before), so an earlier process that had this pid.
  if (holder.pid === process.pid || !isRunning(holder.pid)) return { live: false, reason: "its process no longer runs" };
  if (holder.startTicks !== undefined) {
    const startTicks = await startTicksOf(holder.pid);
    if (startTicks !== undefined && startTicks !== holder.startTicks) {
      return { live: false, reason: "its pid now names a process that started later" };
    }
    return { live: true, reason: "running" };
  }
  // An older build's bare pid: as Postgres does, a lock naming this process's parent is stale
  // (in a restarted container the pids start over, and the parent may be pid 1).
  if (holder.hostname === undefined && holder.pid === process.ppid) {
    return { live: false, reason: "an older build's lock names this process's parent" };
  }
  return { live: true, reason: holder.hostname === undefined ? "running; an older build's lock, which names the pid alone" : "running" };
}

/**
 * Moves the judged lock aside and deletes it. Should another process have replaced it with its
 * own in the meantime, that one is put back, and the next attempt reads it.
 */
async function removeStale(lockPath: string, judged: Stats): Promise<void> {
  const aside = `${lockPath}.stale.${process.pid}.${randomBytes(4).toString("hex")}`;
  try {
    await rename(lockPath, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  if (!sameFile(await stat(aside), judged)) await link(aside, lockPath).catch(() => {});
  await rm(aside, { force: true });
}

function inUse(dataDir: string, holder: LockHolder, reason: string): DatabaseInUseError {
  const host = holder.hostname === undefined ? "" : ` on ${holder.hostname}`;
  const since = holder.since === undefined ? "" : ` since ${holder.since}`;
  return new DatabaseInUseError(
    `the embedded database in ${dataDir} is in use by process ${holder.pid}${host}${since} (${reason}; lock file ${join(dataDir, LOCK_FILE)}); ` +
      "stop it first, or point both at a Postgres server with DATABASE_URL",
  );
}

let identity: Promise<LockHolder> | undefined;

/** This process, as its lock names it. */
function thisProcess(): Promise<LockHolder> {
  identity ??= (async () => ({
    pid: process.pid,
    hostname: hostname(),
    bootId: (await readFile("/proc/sys/kernel/random/boot_id", "utf8").catch(() => undefined))?.trim(),
    pidNamespace: await readlink("/proc/self/ns/pid").catch(() => undefined),
    startTicks: await startTicksOf("self"),
  }))();
  return identity.then((holder) => ({ ...holder, since: new Date().toISOString() }));
}

/** Field 22 of /proc/<pid>/stat, counted after the command name (which may hold spaces and parentheses). */
async function startTicksOf(pid: number | "self"): Promise<string | undefined> {
  const text = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
  if (text === undefined) return undefined;
  return text.slice(text.lastIndexOf(")") + 2).split(" ")[19];
}

/** Whether a process with `pid` exists; EPERM means it does, under another account. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function sameFile(a: Stats, b: Stats): boolean {
  return a.ino === b.ino && a.dev === b.dev;
}

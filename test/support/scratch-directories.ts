import { accessSync, constants, mkdirSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isRunning } from "../../src/storage/data-directory-lock.js";

/**
 * Directories for test databases (the run's template and each file's copy), in one folder and
 * named after the process that made them, so a run killed before its teardown leaves nothing the
 * next run does not remove. Memory-backed /dev/shm when the machine has it: a copy writes no disk.
 */
function scratchRoot(): string {
  let base = tmpdir();
  try {
    accessSync("/dev/shm", constants.W_OK);
    base = "/dev/shm";
  } catch {}
  const root = join(base, "registry-tests");
  mkdirSync(root, { recursive: true });
  return root;
}

/** A new directory named `<prefix><pid>-XXXXXX`; the caller removes it. */
export async function scratchDirectory(prefix: string): Promise<{ path: string; remove(): Promise<void> }> {
  const path = await mkdtemp(join(scratchRoot(), `${prefix}${process.pid}-`));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/** Removes the directories whose process no longer runs (a run killed before its teardown). */
export async function removeOrphanedScratch(): Promise<void> {
  const root = scratchRoot();
  for (const name of await readdir(root)) {
    const owner = Number(/-(\d+)-[^-]+$/.exec(name)?.[1]);
    if (Number.isInteger(owner) && owner > 0 && !isRunning(owner)) await rm(join(root, name), { recursive: true, force: true });
  }
}

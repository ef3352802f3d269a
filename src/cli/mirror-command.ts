import { setTimeout as sleep } from "node:timers/promises";
import { loadConfig } from "../config.js";
import { createHttpLogSource, LogSourceError } from "../mirror/http-log-source.js";
import { createLogMirror, type LogSource, type MirrorStep } from "../mirror/log-mirror.js";
import { MirrorRefusedError } from "../mirror/mirror-store.js";
import { LogVerificationError, parseLogKey } from "../sdk/log-verifier.js";
import { migrateToLatest, openDatabase } from "../storage/database.js";
import { createKnexMirrorStore } from "../storage/knex-mirror-store.js";
import { nodeMerkleHasher } from "../transparency/node-merkle-hasher.js";
import type { CliContext } from "./cli-context.js";
import { EXIT } from "./exit-codes.js";

export interface RunMirrorOptions {
  readonly from: string;
  readonly logKey?: string;
  readonly once?: boolean;
  readonly interval: string;
  readonly json?: boolean;
}

/** Runs `registry mirror` until caught up (--once) or stopped by SIGINT/SIGTERM; returns the exit code. */
export async function runMirror(options: RunMirrorOptions, context: CliContext): Promise<number> {
  const interval = Number(options.interval);
  if (!Number.isInteger(interval) || interval < 100) {
    context.stderr("registry: --interval must be a whole number of milliseconds, at least 100\n");
    return EXIT.usage;
  }
  const source = createHttpLogSource(options.from);
  const stopping = new AbortController();
  const stop = () => stopping.abort();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  const database = await openDatabase(loadConfig(process.env));
  try {
    await migrateToLatest(database);
    const logKey = await pinnedLogKey(options, source, context);
    const mirror = createLogMirror({ source, store: createKnexMirrorStore(database.knex, logKey), logKey: parseLogKey(logKey), hasher: nodeMerkleHasher });
    for (;;) {
      report(await mirror.catchUp(), options, context);
      if (options.once || stopping.signal.aborted) return EXIT.ok;
      await sleep(interval, undefined, { signal: stopping.signal }).catch(() => undefined);
      if (stopping.signal.aborted) return EXIT.ok;
    }
  } catch (error) {
    if (error instanceof MirrorRefusedError || error instanceof LogVerificationError) {
      context.stderr(`registry: mirror refused: ${error.message}\n`);
      return EXIT.unverified;
    }
    if (error instanceof LogSourceError) {
      context.stderr(`registry: ${error.message}\n`);
      return EXIT.serverOrNetwork;
    }
    throw error;
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    await database.close();
  }
}

/** The key to trust: the one pinned, else the source's own, said aloud since it proves only self-consistency. */
async function pinnedLogKey(options: RunMirrorOptions, source: LogSource, context: CliContext): Promise<string> {
  const pinned = options.logKey ?? (context.env.REGISTRY_LOG_KEY || undefined);
  if (pinned !== undefined) return pinned;
  const published = await source.logKey();
  context.stderr(`registry: the log key came from the source itself; pin it with --log-key or REGISTRY_LOG_KEY:\n  ${published}\n`);
  return published;
}

function report(step: MirrorStep, options: RunMirrorOptions, context: CliContext): void {
  const { from, to, checkpoint } = step;
  if (options.json) {
    context.stdout(`${JSON.stringify({ from, to, treeSize: checkpoint.treeSize, origin: checkpoint.origin, rootHash: Buffer.from(checkpoint.rootHash).toString("base64") })}\n`);
  } else if (to > from) {
    context.stdout(`mirrored records [${from}, ${to}) of ${checkpoint.origin}: verified against its checkpoint of ${checkpoint.treeSize}\n`);
  } else if (options.once || context.stderrIsTty) {
    context.stdout(`up to date with ${checkpoint.origin} at ${checkpoint.treeSize} records\n`);
  }
}

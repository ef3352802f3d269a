import { constants } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { loadConfig } from "../config.js";
import { createHttpLogSource } from "../mirror/http-log-source.js";
import { createLogMirror, type LogSource, type MirrorStep } from "../mirror/log-mirror.js";
import { LogSourceError, MirrorRefusedError, MirrorStoppedError } from "../mirror/mirror-errors.js";
import { MIRROR_SETTING_OPTIONS, settingFlag, type MirrorSettings } from "../mirror/mirror-settings.js";
import { LogVerificationError, parseLogKey } from "../sdk/log-verifier.js";
import { migrateToLatest, openDatabase } from "../storage/database.js";
import { createKnexMirrorStore } from "../storage/knex-mirror-store.js";
import { nodeMerkleHasher } from "../transparency/node-merkle-hasher.js";
import type { CliContext } from "./cli-context.js";
import { EXIT } from "./exit-codes.js";
import { reportingMirrorProgress } from "./mirror-progress.js";
import { createProgressLine } from "./progress-line.js";

export type RunMirrorOptions = {
  readonly from: string;
  readonly logKey?: string;
  readonly moderator?: readonly string[];
  readonly once?: boolean;
  readonly interval: string;
  readonly json?: boolean;
} & { readonly [key in keyof MirrorSettings]?: string };

const STOP_SIGNALS = ["SIGINT", "SIGTERM"] as const;
type StopSignal = (typeof STOP_SIGNALS)[number];

/**
 * Runs `registry mirror` until caught up (--once) or stopped by SIGINT/SIGTERM; returns the exit
 * code. A signal stops requests to the source at once, and the catch-up after the batch being
 * written, if any, commits: what was proved stays and the next run goes on from there.
 */
export async function runMirror(options: RunMirrorOptions, context: CliContext): Promise<number> {
  const interval = Number(options.interval);
  if (!Number.isInteger(interval) || interval < 100) {
    context.stderr("registry: --interval must be a whole number of milliseconds, at least 100\n");
    return EXIT.usage;
  }
  const settings = mirrorSettings(options, context);
  if (settings === undefined) return EXIT.usage;
  const stopping = new AbortController();
  let stoppedBy: StopSignal | undefined;
  const stop = (signal: StopSignal) => {
    stoppedBy ??= signal;
    stopping.abort();
  };
  for (const signal of STOP_SIGNALS) process.on(signal, stop);
  const source = createHttpLogSource(options.from, { limits: settings, signal: stopping.signal });
  const database = await openDatabase(loadConfig(process.env));
  try {
    await migrateToLatest(database);
    const logKey = await pinnedLogKey(options, source, context);
    // On a terminal, stderr shows how far each catch-up has come.
    const progress = createProgressLine(context);
    const watched = reportingMirrorProgress(source, createKnexMirrorStore(database.knex, logKey), progress);
    const mirror = createLogMirror({
      ...watched,
      logKey: parseLogKey(logKey),
      hasher: nodeMerkleHasher,
      batch: settings.batch,
      signal: stopping.signal,
      ...(options.moderator === undefined ? {} : { moderators: options.moderator }),
    });
    for (;;) {
      const step = await mirror.catchUp().finally(() => progress.end());
      report(step, options, context);
      if (options.once || stopping.signal.aborted) return EXIT.ok;
      await sleep(interval, undefined, { signal: stopping.signal }).catch(() => undefined);
      if (stopping.signal.aborted) return EXIT.ok;
    }
  } catch (error) {
    if (error instanceof MirrorStoppedError) {
      context.stderr`registry: mirror stopped by ${stoppedBy ?? "a signal"}: ${error.message}; what was proved is kept, and the next run goes on from there\n`;
      // Following has no end but a stop; a catch-up asked for (--once) that did not finish fails as a signal would.
      return options.once ? 128 + constants.signals[stoppedBy ?? "SIGTERM"] : EXIT.ok;
    }
    if (error instanceof MirrorRefusedError || error instanceof LogVerificationError) {
      context.stderr`registry: mirror refused: ${error.message}\n`;
      return EXIT.unverified;
    }
    if (error instanceof LogSourceError) {
      context.stderr`registry: ${error.message}\n`;
      return EXIT.serverOrNetwork;
    }
    throw error;
  } finally {
    for (const signal of STOP_SIGNALS) process.off(signal, stop);
    await database.close();
  }
}

/** The settings from their options, each checked against its bounds; undefined (said on stderr) when one is out. */
function mirrorSettings(options: RunMirrorOptions, context: CliContext): MirrorSettings | undefined {
  const settings: Partial<Record<keyof MirrorSettings, number>> = {};
  for (const option of MIRROR_SETTING_OPTIONS) {
    const text = options[option.key];
    const value = text === undefined ? option.default : Number(text);
    if (!Number.isInteger(value) || value < option.min || value > option.max) {
      context.stderr`registry: ${settingFlag(option.key)} must be a whole number of ${option.unit} from ${option.min} to ${option.max}\n`;
      return undefined;
    }
    settings[option.key] = value;
  }
  return settings as MirrorSettings;
}

/** The key to trust: the one pinned, else the source's own, said aloud since it proves only self-consistency. */
async function pinnedLogKey(options: RunMirrorOptions, source: LogSource, context: CliContext): Promise<string> {
  const pinned = options.logKey ?? (context.env.REGISTRY_LOG_KEY || undefined);
  if (pinned !== undefined) return pinned;
  const published = await source.logKey();
  context.stderr`registry: the log key came from the source itself; pin it with --log-key or REGISTRY_LOG_KEY:\n  ${published}\n`;
  return published;
}

function report(step: MirrorStep, options: RunMirrorOptions, context: CliContext): void {
  const { from, to, checkpoint } = step;
  if (options.json) {
    context.stdout(
      `${JSON.stringify({ from, to, treeSize: checkpoint.treeSize, origin: checkpoint.origin, rootHash: Buffer.from(checkpoint.rootHash).toString("base64") })}\n`,
    );
  } else if (to > from) {
    context.stdout`mirrored records [${from}, ${to}) of ${checkpoint.origin}: verified against its checkpoint of ${checkpoint.treeSize}\n`;
  } else if (options.once || context.stderrIsTty) {
    context.stdout`up to date with ${checkpoint.origin} at ${checkpoint.treeSize} records\n`;
  }
}

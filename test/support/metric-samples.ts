import { usesPostgres } from "./test-database.js";

/** A metric's value in Prometheus text, or 0 when the series is not there yet. */
export function sample(text: string, series: string): number {
  const line = text.split("\n").find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

const CHANGES_HEARD = 'registry_change_feed_events_total{event="change"}';

/** Changes the registry serving `metricsUrl` has heard through its Postgres change feed. */
export async function changesHeard(metricsUrl: string): Promise<number> {
  return sample(await (await fetch(metricsUrl)).text(), CHANGES_HEARD);
}

/**
 * Waits until the registry has heard `count` changes through its change feed. A write through a
 * registry on Postgres reaches its caches twice: at once, and again when its own notification
 * echoes back through the feed, a moment later. A test that counts cache hits waits for the echo
 * first, or an answer kept in between is dropped by it and the next read counts as a miss. On the
 * embedded database there is no feed, and nothing to wait for.
 */
export async function untilChangesHeard(metricsUrl: string, count: number, timeoutMs = 5_000): Promise<void> {
  if (!usesPostgres()) return;
  const deadline = Date.now() + timeoutMs;
  while ((await changesHeard(metricsUrl)) < count) {
    if (Date.now() > deadline) throw new Error(`the change feed did not deliver ${count} changes within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

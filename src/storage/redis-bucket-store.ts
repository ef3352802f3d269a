import type { BucketStore } from "../rate-limits/bucket-store.js";
import { decisionAt, TIME_GRAIN_MS, tokenInterval } from "../rate-limits/gcra.js";

/**
 * The same rule as gcra.ts, as one script: Redis runs it atomically, on its own clock, and the key
 * expires when the bucket is full again, so Redis holds only buckets in use. Times are taken down
 * to whole grains (ARGV[3] per ms) as gcra.ts does. Numbers travel as strings, written with 17
 * digits: Redis would truncate Lua's fractions to integers, and Lua's tostring keeps only 14 digits,
 * a tenth of a millisecond at today's epoch.
 */
const TAKE_SCRIPT = `
local interval = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local grains = tonumber(ARGV[3])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
local start = math.floor(math.max(tonumber(redis.call('GET', KEYS[1])) or now, now) * grains) / grains
local function exact(ms) return string.format('%.17g', ms) end
if start + interval - now <= capacity then
  redis.call('SET', KEYS[1], exact(start + interval), 'PX', math.ceil(start + interval - now))
  return {1, exact(now), exact(start + interval)}
end
return {0, exact(now), exact(start)}`;

const KEY_PREFIX = "registry:rate-limit:";
const CONNECT_WAIT_MS = 1_000;

export interface RedisBucketStoreOptions {
  readonly url: string;
  /** Told about connection trouble (at most once a minute); the client reconnects by itself. */
  readonly onError: (error: unknown) => void;
}

/**
 * Buckets in Redis, shared by every replica that uses the same server. The client is loaded only
 * when configured. Commands fail at once while disconnected (no offline queue), so the rate
 * limiter can fall back instead of waiting.
 */
export async function createRedisBucketStore(options: RedisBucketStoreOptions): Promise<BucketStore> {
  const { createClient } = await import("redis");
  const client = createClient({
    url: options.url,
    disableOfflineQueue: true,
    socket: { connectTimeout: 1_000, reconnectStrategy: (retries: number) => Math.min(100 * 2 ** retries, 5_000) },
  });
  // The client reports every failed reconnect; once a minute is enough for a log.
  let lastReport = -Infinity;
  const report = (error: unknown) => {
    if (Date.now() - lastReport < 60_000) return;
    lastReport = Date.now();
    options.onError(error);
  };
  client.on("error", report);
  // Waited for briefly, so the first reads find the store; a Redis that is down at start must not
  // keep the registry from serving, and the client goes on reconnecting in the background.
  await Promise.race([client.connect().catch(report), new Promise((resolve) => setTimeout(resolve, CONNECT_WAIT_MS).unref())]);
  let sha: string | undefined;

  async function run(key: string, interval: number, capacity: number): Promise<[number, string, string]> {
    const args = ["1", KEY_PREFIX + key, String(interval), String(capacity), String(1 / TIME_GRAIN_MS)];
    if (sha !== undefined) {
      try {
        return await client.sendCommand(["EVALSHA", sha, ...args]);
      } catch (error) {
        if (!String((error as Error).message).startsWith("NOSCRIPT")) throw error;
      }
    }
    sha = await client.scriptLoad(TAKE_SCRIPT);
    return client.sendCommand(["EVALSHA", sha, ...args]);
  }

  return {
    async take(key, limits) {
      const interval = tokenInterval(limits);
      const [allowed, now, tat] = await run(key, interval, limits.burst * interval);
      return decisionAt(limits, Number(now), Number(tat), allowed === 1);
    },
    async close() {
      if (client.isOpen) await client.close().catch(() => {});
      else client.destroy();
    },
  };
}

import { spawn } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LARGEST_ANSWER_BYTES } from "../../src/mirror/mirror-settings.js";
import {
  checkpointReaches,
  logKeyOf,
  mirrorDatabase,
  publishVersion,
  runMirrorCli,
  stateOf,
  type MirrorDatabase,
} from "../mirror/mirror-fixture.js";
import { childEnv, PROJECT_ROOT, REGISTRY_BIN } from "../support/child-processes.js";
import { startPublishingRegistry, type PublishingSetup } from "../support/registry-fixture.js";

/**
 * `registry mirror` against sources that send too much, too slowly or nothing: each is given up on
 * within its bound, with nothing written, and SIGTERM stops the mirror within seconds wherever it
 * waits. A mirror stopped between batches resumes from what it proved. The hostile sources are
 * local servers that pass every other request through to a real source registry.
 */

const RECORDS = 40;
/** A stop is asked for with every timeout at this, so only the signal can end the wait early. */
const NEVER_MS = 600_000;
/** How long a stop may take: process start, a database close, a busy machine. */
const STOP_WITHIN_MS = 20_000;

let source: PublishingSetup;
let logKey: string;

beforeAll(async () => {
  source = await startPublishingRegistry(["registry.publish.skill"], { logIntegrateMs: 50, logOrigin: "hostile.test/log" });
  await Promise.all(Array.from({ length: RECORDS }, (_, i) => publishVersion(source, `hostile-${i}`, "1.0.0")));
  logKey = await logKeyOf(source.registry.url);
  await checkpointReaches(source.registry.url, RECORDS);
}, 120_000);
afterAll(async () => {
  await source?.close();
});

/** What a hostile server does with a request it takes (counting what it writes); `false` passes it through to the source. */
type Hostility = (req: http.IncomingMessage, res: http.ServerResponse, written: (bytes: number) => void) => boolean;

interface HostileSource {
  readonly url: string;
  /** Resolves on the first request the hostility took. */
  readonly engaged: Promise<void>;
  /** Bytes the hostility has written. */
  sent(): number;
  close(): Promise<void>;
}

async function startHostileSource(hostility: Hostility): Promise<HostileSource> {
  let engage!: () => void;
  const engaged = new Promise<void>((resolve) => (engage = resolve));
  let sent = 0;
  const server = http.createServer(async (req, res) => {
    if (hostility(req, res, (bytes) => (sent += bytes))) return engage();
    const upstream = await fetch(`${source.registry.url}${req.url}`);
    res.writeHead(upstream.status, { "content-type": upstream.headers.get("content-type") ?? "application/octet-stream" });
    res.end(new Uint8Array(await upstream.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    engaged,
    sent: () => sent,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** An answer without end, as fast as the client takes it. */
function flood(res: http.ServerResponse, written: (bytes: number) => void): true {
  const chunk = Buffer.alloc(256 * 1024, 1);
  res.writeHead(200, { "content-type": "application/octet-stream" });
  const pump = () => {
    while (!res.destroyed) {
      written(chunk.length);
      if (!res.write(chunk)) return res.once("drain", pump);
    }
  };
  pump();
  return true;
}

/** An answer without end, a byte every 100 ms: never quiet long enough for the idle timeout. */
function trickle(res: http.ServerResponse): true {
  res.writeHead(200, { "content-type": "text/plain" });
  const timer = setInterval(() => res.write("x"), 100);
  res.on("close", () => clearInterval(timer));
  return true;
}

async function expectNothingWritten(mirror: MirrorDatabase): Promise<void> {
  const opened = await mirror.open();
  try {
    expect((await stateOf(opened.knex)).log).toEqual([]);
  } finally {
    await opened.close();
  }
}

/** Runs the mirror against a hostile source to its end; the CLI's own bound is the test's. */
/** `registry mirror` from `source` into `mirror`, as a child to signal: its stderr so far, and a stop that waits for its exit (SIGKILL past STOP_WITHIN_MS). */
function startMirror(source: string, mirror: MirrorDatabase, args: readonly string[]) {
  const child = spawn(process.execPath, [REGISTRY_BIN, "mirror", "--from", source, "--log-key", logKey, ...args], {
    env: childEnv({ REGISTRY_LOG_KEY: undefined, ...mirror.env }),
    cwd: PROJECT_ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    stderr: () => stderr,
    async stop(signal: NodeJS.Signals): Promise<number | null> {
      child.kill(signal);
      const guard = setTimeout(() => child.kill("SIGKILL"), STOP_WITHIN_MS);
      try {
        return await exited;
      } finally {
        clearTimeout(guard);
      }
    },
  };
}

async function mirrorFrom(hostility: Hostility, args: readonly string[]) {
  const hostile = await startHostileSource(hostility);
  const mirror = await mirrorDatabase();
  try {
    const result = await runMirrorCli(hostile.url, ["--log-key", logKey, "--once", ...args], mirror, 90_000);
    await expectNothingWritten(mirror);
    return { ...result, sent: hostile.sent() };
  } finally {
    await hostile.close();
    await mirror.remove();
  }
}

describe("registry mirror against hostile sources", () => {
  it("refuses an endless entry bundle once it passes the largest a bundle can be (exit 6), having read no more", async () => {
    const result = await mirrorFrom((req, res, written) => req.url!.startsWith("/tile/entries/") && flood(res, written), []);
    expect(result.code, result.stderr).toBe(6);
    expect(result.stderr).toMatch(
      /^registry: mirror refused: GET http:\/\/127\.0\.0\.1:\d+\/tile\/entries\/000\.p\/40: the source's answer is longer than 16777472 bytes/,
    );
    // What the server got written before the mirror hung up: the limit, and what sockets buffer.
    expect(result.sent).toBeLessThan(64 * 1024 * 1024);
  }, 120_000);

  it("refuses a checkpoint that says it is larger than a checkpoint can be, before reading it (exit 6)", async () => {
    const result = await mirrorFrom((req, res) => {
      if (req.url !== "/checkpoint") return false;
      res.writeHead(200, { "content-length": String(10 ** 10) }).write("x");
      return true;
    }, []);
    expect(result.code, result.stderr).toBe(6);
    expect(result.stderr).toContain(`/checkpoint: the source's answer is longer than ${LARGEST_ANSWER_BYTES.checkpoint} bytes`);
  }, 120_000);

  it("gives up on a checkpoint trickled a byte at a time at --request-timeout (exit 5)", async () => {
    const result = await mirrorFrom((req, res) => req.url === "/checkpoint" && trickle(res), ["--request-timeout", "1000"]);
    expect(result.code, result.stderr).toBe(5);
    expect(result.stderr).toMatch(/\/checkpoint: the answer took longer than 1000 ms in all \(--request-timeout\)\n$/);
  }, 120_000);

  it("gives up on a source that takes the request and never answers at --idle-timeout (exit 5)", async () => {
    const result = await mirrorFrom((req) => req.url === "/checkpoint", ["--idle-timeout", "500"]);
    expect(result.code, result.stderr).toBe(5);
    expect(result.stderr).toMatch(/\/checkpoint: the source sent nothing for 500 ms \(--idle-timeout\)\n$/);
  }, 120_000);

  it("stops within seconds of SIGTERM while the source never answers: 143 with --once, 0 when following, nothing written", async () => {
    for (const [mode, expected] of [
      [["--once"], 143],
      [[], 0],
    ] as const) {
      const hostile = await startHostileSource((req) => req.url === "/checkpoint");
      const mirror = await mirrorDatabase();
      try {
        const timeouts = ["--connect-timeout", "--idle-timeout", "--request-timeout"].flatMap((flag) => [flag, String(NEVER_MS)]);
        const running = startMirror(hostile.url, mirror, [...timeouts, ...mode]);
        await hostile.engaged;
        const stoppedAt = Date.now();
        const code = await running.stop("SIGTERM");
        const stderr = running.stderr();
        expect(code, stderr).toBe(expected);
        expect(Date.now() - stoppedAt).toBeLessThan(STOP_WITHIN_MS);
        expect(stderr).toMatch(/registry: mirror stopped by SIGTERM: .*what was proved is kept, and the next run goes on from there\n$/);
        await expectNothingWritten(mirror);
      } finally {
        await hostile.close();
        await mirror.remove();
      }
    }
  }, 180_000);

  it("stopped between batches, keeps the batches it proved and resumes from them", async () => {
    // Batches of 10: the third needs the proof from 30 to the checkpoint, which never comes.
    const hostile = await startHostileSource((req) => req.url!.startsWith("/v1/log/proofs/consistency?fromSize=30&"));
    const mirror = await mirrorDatabase();
    try {
      const running = startMirror(hostile.url, mirror, ["--once", "--batch", "10"]);
      await hostile.engaged;
      const code = await running.stop("SIGINT");
      const stderr = running.stderr();
      expect(code, stderr).toBe(130);
      expect(stderr).toContain(`registry: mirror stopped by SIGINT: stopped at 20 records of ${hostile.url}'s ${RECORDS}`);
      const opened = await mirror.open();
      try {
        const kept = await stateOf(opened.knex);
        expect(kept.log.map((row) => Number(row.log_index))).toEqual(Array.from({ length: 20 }, (_, i) => i));
        // A first run stopped before its last batch has no checkpoint yet: the next run must go on all the same.
        expect(await opened.knex("registry_checkpoints").select("size")).toEqual([]);
      } finally {
        await opened.close();
      }

      // The next run goes on from record 20 and ends with the source's log, entries and tree.
      const resumed = await runMirrorCli(source.registry.url, ["--log-key", logKey, "--once", "--json"], mirror);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout)).toMatchObject({ from: 20, to: RECORDS });
      const done = await mirror.open();
      try {
        expect(await stateOf(done.knex)).toEqual(await stateOf(source.db.database.knex));
      } finally {
        await done.close();
      }
    } finally {
      await hostile.close();
      await mirror.remove();
    }
  }, 180_000);
});

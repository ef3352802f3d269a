import { spawn } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childEnv, PROJECT_ROOT, REGISTRY_BIN } from "../support/child-processes.js";
import { startPublishingRegistry, startTestRegistry, type PublishingSetup } from "../support/registry-fixture.js";
import {
  checkpointReaches,
  logKeyOf,
  mirrorDatabase,
  type MirrorDatabase,
  publishVersion,
  revokeVersion,
  runMirrorCli,
  stateOf,
} from "./mirror-fixture.js";

/**
 * `registry mirror --from <url>` against a running source registry: a fresh database catches up
 * (more than one tile of records, a revocation among them), follows as the source grows, and ends
 * with the source's log, entries and tree, record for record. A source whose records do not match
 * its signed checkpoint, or a key that did not sign it, is refused with nothing written.
 */

const FIRST_BATCH = 300;
let source: PublishingSetup;
let logKey: string;

beforeAll(async () => {
  source = await startPublishingRegistry(["registry.publish.skill"], { logIntegrateMs: 50, logOrigin: "source.test/log" });
  await publish(0, FIRST_BATCH);
  await revokeVersion(source, `did:reg:main:skill:mirrored-7@1.0.0`, "superseded");
  logKey = await logKeyOf(source.registry.url);
  await checkpointReaches(source.registry.url, FIRST_BATCH + 1);
}, 120_000);
afterAll(async () => {
  await source?.close();
});

async function publish(from: number, to: number): Promise<void> {
  for (let start = from; start < to; start += 50) {
    await Promise.all(Array.from({ length: Math.min(50, to - start) }, (_, i) => publishVersion(source, `mirrored-${start + i}`, "1.0.0")));
  }
}

const mirrorCli = (args: string[], mirror: MirrorDatabase) => runMirrorCli(source.registry.url, args, mirror);

describe("registry mirror", () => {
  it("catches up from nothing, then follows the source as it grows, ending with its log, entries and tree", async () => {
    const mirror = await mirrorDatabase();
    try {
      const once = await mirrorCli(["--log-key", logKey, "--once", "--json"], mirror);
      expect(once.code, once.stderr).toBe(0);
      const steps = once.stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line));
      expect(steps).toEqual([
        expect.objectContaining({ from: 0, to: FIRST_BATCH + 1, treeSize: FIRST_BATCH + 1, origin: "source.test/log" }),
      ]);
      let opened = await mirror.open();
      expect(await stateOf(opened.knex)).toEqual(await stateOf(source.db.database.knex));
      await opened.close();

      // Following: the source grows (creates and a revocation) while the mirror runs.
      const follower = spawn(
        process.execPath,
        [REGISTRY_BIN, "mirror", "--from", source.registry.url, "--log-key", logKey, "--interval", "100", "--json"],
        {
          env: childEnv(mirror.env),
          cwd: PROJECT_ROOT,
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      let output = "";
      follower.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
      follower.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => follower.once("exit", (code) => resolve(code)));
      await publish(FIRST_BATCH, FIRST_BATCH + 40);
      await revokeVersion(source, `did:reg:main:skill:mirrored-${FIRST_BATCH + 3}@1.0.0`, "withdrawn");
      const finalSize = FIRST_BATCH + 1 + 40 + 1;
      await checkpointReaches(source.registry.url, finalSize);
      for (let attempt = 0; attempt < 300 && !output.includes(`"to":${finalSize},`); attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      follower.kill("SIGTERM");
      expect(await exited, output).toBe(0);
      expect(output).toContain(`"to":${finalSize},`);
      opened = await mirror.open();
      expect(await stateOf(opened.knex)).toEqual(await stateOf(source.db.database.knex));
      await opened.close();

      // Up to date: another run writes nothing and says so. Without a pinned key it takes the
      // source's own, and says that too.
      const again = await mirrorCli(["--once"], mirror);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toBe(`up to date with source.test/log at ${finalSize} records\n`);
      expect(again.stderr).toBe(
        `registry: the log key came from the source itself; pin it with --log-key or REGISTRY_LOG_KEY:\n  ${logKey}\n`,
      );
    } finally {
      await mirror.remove();
    }
  }, 120_000);

  it("leaves a database that a registry serves as the source's copy: the source's key, its checkpoints, no writes", async () => {
    const mirror = await mirrorDatabase();
    try {
      const once = await mirrorCli(["--log-key", logKey, "--once"], mirror);
      expect(once.code, once.stderr).toBe(0);
      const opened = await mirror.open();
      const served = await startTestRegistry(opened.database, { logOrigin: "mirror.test/log" });
      try {
        const key = (await (await fetch(`${served.url}/v1/log/key`)).json()) as { origin: string; verifierKey: string };
        expect(key).toMatchObject({ origin: "source.test/log", verifierKey: logKey });
        const checkpoint = (await (await fetch(`${served.url}/v1/log/checkpoint`)).json()) as { checkpoint: string };
        expect(checkpoint.checkpoint).toMatch(/^source\.test\/log\n/);
        const resolved = await fetch(`${served.url}/v1/entries/${encodeURIComponent("did:reg:main:skill:mirrored-3@1.0.0")}`);
        expect(resolved.status).toBe(200);

        // A write would take an index the source fills next: refused, and the database unchanged.
        const before = await stateOf(opened.knex);
        const token = await served.accessToken(source.publisher.did, ["registry.publish.skill"]);
        const created = await fetch(`${served.url}/v1/entries`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify(await source.publisher.entry("local-only", "1.0.0")),
        });
        expect(created.status).toBe(400);
        expect(await created.json()).toMatchObject({
          code: "failed_precondition",
          message: "this registry serves a mirror of source.test/log: publish, revoke and act there",
        });
        const did = "did:reg:main:skill:mirrored-4@1.0.0";
        const revoked = await fetch(`${served.url}/v1/entries/${encodeURIComponent(did)}`, {
          method: "DELETE",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify(await source.publisher.revocation(did, "not here")),
        });
        expect(revoked.status).toBe(400);
        expect(await stateOf(opened.knex)).toEqual(before);
      } finally {
        await served.close();
        await opened.close();
      }
      // The mirror goes on: nothing was written outside it.
      const again = await mirrorCli(["--log-key", logKey, "--once"], mirror);
      expect(again.code, again.stderr).toBe(0);
    } finally {
      await mirror.remove();
    }
  }, 120_000);

  it("refuses to copy a second log into a database that holds another's", async () => {
    const mirror = await mirrorDatabase();
    const other = await startPublishingRegistry(["registry.publish.skill"], { logIntegrateMs: 50, logOrigin: "other.test/log" });
    try {
      expect((await mirrorCli(["--log-key", logKey, "--once"], mirror)).code).toBe(0);
      const otherKey = await logKeyOf(other.registry.url);
      const result = await runMirrorCli(other.registry.url, ["--log-key", otherKey, "--once"], mirror);
      expect(result.code).toBe(6);
      expect(result.stderr).toMatch(/^registry: mirror refused: /);
    } finally {
      await other.close();
      await mirror.remove();
    }
  }, 120_000);

  it("refuses a source whose checkpoint the pinned key did not sign (exit 6), writing nothing", async () => {
    const mirror = await mirrorDatabase();
    try {
      const foreign = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
      const result = await mirrorCli(["--log-key", foreign, "--once"], mirror);
      expect(result.code).toBe(6);
      expect(result.stderr).toMatch(/^registry: mirror refused: .*the checkpoint does not verify/);
      const opened = await mirror.open();
      expect((await stateOf(opened.knex)).log).toEqual([]);
      await opened.close();
    } finally {
      await mirror.remove();
    }
  }, 60_000);

  it("refuses records that are not the ones the signed checkpoint commits to, though their signatures hold (exit 6), writing nothing", async () => {
    // A source that serves its own checkpoint but alters record 5's loggedAt, which no publisher signs.
    const tampering = http.createServer(async (req, res) => {
      const upstream = await fetch(`${source.registry.url}${req.url}`);
      let body = new Uint8Array(await upstream.arrayBuffer());
      if (req.url === "/tile/entries/000" || req.url?.startsWith("/tile/entries/000.p/")) {
        const text = Buffer.from(body).toString("latin1");
        const altered = text.replace(
          /("index":"5".*?"loggedAt":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.)(\d)/,
          (_, head: string, digit: string) => head + ((Number(digit) + 1) % 10),
        );
        expect(altered).not.toBe(text);
        body = new Uint8Array(Buffer.from(altered, "latin1"));
      }
      res.writeHead(upstream.status, { "content-type": upstream.headers.get("content-type") ?? "application/octet-stream" });
      res.end(body);
    });
    await new Promise<void>((resolve) => tampering.listen(0, "127.0.0.1", resolve));
    const mirror = await mirrorDatabase();
    try {
      const url = `http://127.0.0.1:${(tampering.address() as AddressInfo).port}`;
      const result = await runMirrorCli(url, ["--log-key", logKey, "--once"], mirror);
      expect(result.code, result.stderr).toBe(6);
      expect(result.stderr).toMatch(
        /^registry: mirror refused: records \[0, \d+\) from .* are not the ones its checkpoint of \d+ records commits to\n$/,
      );
      const opened = await mirror.open();
      expect((await stateOf(opened.knex)).log).toEqual([]);
      await opened.close();
    } finally {
      tampering.close();
      await mirror.remove();
    }
  }, 60_000);
});

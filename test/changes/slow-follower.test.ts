import http from "node:http";
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPublishingRegistry, type PublishingSetup } from "../support/registry-fixture.js";
import { changeLogSize, publishOverRest } from "../support/rest-publishing.js";

/**
 * Streams at the head of the log are written each new record as the shared tail reads it. One
 * whose client stops reading leaves the head, buffering no more than its socket holds, while the
 * others go on being written; once its client reads again it catches up by reading the log, with
 * no gap and no record twice.
 */

/** Entries of this much data: a few fill any stream's buffers. */
const DATA_BYTES = 30_000;

let setup: PublishingSetup;
let url: string;

beforeAll(async () => {
  // A stall timeout far past the test's pause: the slow stream must be waited for, not ended.
  // Room for more streams at the head than are written to in one turn.
  setup = await startPublishingRegistry(["registry.publish.skill"], { streamStallTimeoutMs: 60_000, maxStreamsPerIp: 0 });
  url = setup.registry.url;
  // The streams start after the last record: the log must hold one.
  await publish("slow-follower-first", "1.0.0");
});
afterAll(async () => {
  await setup?.close();
});

function publish(name: string, version: string, dataBytes = DATA_BYTES): Promise<void> {
  return publishOverRest(setup, name, version, { data: { blob: "x".repeat(dataBytes) } });
}

const logSize = () => changeLogSize(url);

/** The event ids in an SSE body so far. */
function ids(body: string): number[] {
  return [...body.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));
}

/** Resolves once `read()` holds `count` ids; rejects after `ms`. */
async function until(read: () => string, count: number, ms = 20_000): Promise<number[]> {
  const deadline = Date.now() + ms;
  while (ids(read()).length < count) {
    if (Date.now() > deadline) throw new Error(`${ids(read()).length} of ${count} events arrived: ${read().slice(0, 300)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return ids(read());
}

describe("a stream at the head whose client stops reading", () => {
  it("is left behind without holding the others, then catches up gapless once its client reads", async () => {
    const start = await logSize();
    const due = (count: number) => Array.from({ length: count }, (_, i) => start + i);

    let fast = "";
    const fastRequest = http.get(`${url}/v1/changes/stream?after=${start - 1}`, (response) => {
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (fast += chunk));
    });
    // An HTTP/2 client that grants no window: the server can send the slow stream nothing until
    // the window opens, and its writes report it full.
    const session = http2.connect(url, { settings: { initialWindowSize: 0 } });
    let slow = "";
    const slowStream = session.request({ ":path": `/v1/changes/stream?after=${start - 1}` });
    slowStream.setEncoding("utf8");
    slowStream.on("data", (chunk: string) => (slow += chunk));
    try {
      await new Promise((resolve) => slowStream.once("response", resolve));
      await until(() => fast, 0);
      for (let version = 1; version <= 8; version += 1) await publish("slow-follower", `${version}.0.0`);
      expect(await until(() => fast, 8)).toEqual(due(8));
      expect(ids(slow)).toEqual([]);

      // The slow client reads again while more records are committed.
      session.setLocalWindowSize(16 * 1024 * 1024);
      session.settings({ initialWindowSize: 1024 * 1024 });
      for (let version = 9; version <= 12; version += 1) await publish("slow-follower", `${version}.0.0`);
      expect(await until(() => slow, 12)).toEqual(due(12));
      expect(await until(() => fast, 12)).toEqual(due(12));
    } finally {
      fastRequest.destroy();
      slowStream.close();
      session.close();
    }
  });
});

describe("many streams at the head, each event past a socket's buffer mark", () => {
  it("all receive every event, including those written in a later turn whose socket drains at once", async () => {
    const start = await logSize();
    const bodies: string[] = [];
    const requests = Array.from({ length: 100 }, (_, i) => {
      bodies.push("");
      return http.get(`${url}/v1/changes/stream?after=${start - 1}`, (response) => {
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => (bodies[i] += chunk));
      });
    });
    try {
      await until(() => (bodies.every((body) => body.startsWith(": changes")) ? "id: 0\n" : ""), 1);
      // Each event alone fills a socket's buffer mark (16 KiB), so every write reports it full.
      for (let version = 1; version <= 3; version += 1) await publish("many-at-head", `${version}.0.0`, 20_000);
      for (const [i] of bodies.entries()) expect(await until(() => bodies[i]!, 3)).toEqual([start, start + 1, start + 2]);
    } finally {
      for (const request of requests) request.destroy();
    }
  });
});

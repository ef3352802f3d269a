import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPublishingRegistry, type PublishingSetup } from "../support/registry-fixture.js";
import { publishOverRest } from "../support/rest-publishing.js";

/**
 * SSE events are written as HTTP/1.1 chunks framed once per event, straight to the socket; an
 * HTTP/1.0 client, which cannot take chunks, gets the bare events. Read here as raw bytes, so a
 * frame one byte off fails rather than being mended by a lenient client.
 */

let setup: PublishingSetup;
let url: URL;

beforeAll(async () => {
  setup = await startPublishingRegistry(["registry.publish.skill"]);
  url = new URL(setup.registry.url);
  await publish("framing", "1.0.0");
});
afterAll(async () => {
  await setup?.close();
});

function publish(name: string, version: string): Promise<void> {
  // Non-ASCII text: a chunk's size counts bytes, not characters.
  return publishOverRest(setup, name, version, { data: { note: "é ✓ 𝄞".repeat(50) } });
}

/** The raw bytes of a stream's answer until `done(bytes)` holds, then the connection is closed. */
function rawStream(version: "1.0" | "1.1", done: (bytes: Buffer) => boolean): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    let bytes = Buffer.alloc(0);
    socket.on("error", reject);
    socket.on("connect", () => socket.write(`GET /v1/changes/stream HTTP/${version}\r\nhost: ${url.host}\r\n\r\n`));
    socket.on("data", (chunk: Buffer) => {
      bytes = Buffer.concat([bytes, chunk]);
      if (!done(bytes)) return;
      socket.destroy();
      resolve(bytes);
    });
  });
}

/** The body of a chunked answer, each chunk's size checked against its bytes; undefined while a chunk is cut. */
function dechunk(body: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  while (at < body.length) {
    const line = body.indexOf("\r\n", at);
    if (line < 0) return undefined;
    const size = Number.parseInt(body.subarray(at, line).toString("latin1"), 16);
    const end = line + 2 + size;
    if (body.length < end + 2) return undefined;
    expect(body.subarray(end, end + 2).toString("latin1")).toBe("\r\n");
    parts.push(body.subarray(line + 2, end));
    at = end + 2;
  }
  return Buffer.concat(parts);
}

function split(answer: Buffer): { head: string; body: Buffer } {
  const at = answer.indexOf("\r\n\r\n");
  return { head: answer.subarray(0, at).toString("latin1"), body: answer.subarray(at + 4) };
}

/** The events' ids and parsed data in an SSE text. */
function events(text: string): Array<{ id: string; data: { index: string; entry: { data: { note: string } } } }> {
  return [...text.matchAll(/^id: (\d+)\nevent: change\ndata: (.*)\n\n/gm)].map((match) => ({ id: match[1]!, data: JSON.parse(match[2]!) }));
}

describe("SSE framing", () => {
  it("writes each event as one whole chunk over HTTP/1.1, live ones as well as replayed", async () => {
    const seen = rawStream("1.1", (bytes) => {
      const body = dechunk(split(bytes).body);
      return body !== undefined && events(body.toString("utf8")).length >= 2;
    });
    // The second event is written to a stream that has caught up: by the shared read at the head.
    setTimeout(() => void publish("framing", "2.0.0"), 200);
    const { head, body } = split(await seen);
    expect(head).toMatch(/transfer-encoding: chunked/i);
    const received = events(dechunk(body)!.toString("utf8"));
    expect(received.map((event) => event.id)).toEqual(["0", "1"]);
    for (const event of received) expect(event.data.entry.data.note).toBe("é ✓ 𝄞".repeat(50));
  });

  it("writes bare events to an HTTP/1.0 client", async () => {
    const answer = await rawStream("1.0", (bytes) => events(split(bytes).body.toString("utf8")).length >= 1);
    const { head, body } = split(answer);
    expect(head).not.toMatch(/transfer-encoding/i);
    expect(body.toString("utf8")).toMatch(/^: changes\n\nid: 0\nevent: change\ndata: /);
  });
});

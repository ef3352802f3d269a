import net from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startRegistryOnFreshDatabase, type FreshRegistry } from "../support/registry-fixture.js";

/**
 * A shutdown on a starved process, over keep-alive connections the server had already answered
 * once: a request that reaches the kernel while the event loop is busy past the linger must be read
 * and answered (or refused with a 503), not met by the idle close's FIN. Timers run before I/O in a
 * turn of the loop, so an idle check made only by the clock sees "nothing read" for bytes the
 * kernel holds, and a response written after that FIN never leaves.
 */

const CONNECTIONS = 8;
const REQUEST = "GET /healthz HTTP/1.1\r\nHost: registry.test\r\n\r\n";

let fresh: FreshRegistry;
beforeAll(async () => {
  fresh = await startRegistryOnFreshDatabase();
});
afterAll(async () => {
  await fresh?.db.drop();
});

/** A keep-alive connection whose first request has been answered, with everything it receives. */
async function answeredConnection(port: number) {
  const socket = await new Promise<net.Socket>((resolve, reject) => {
    const connected = net.connect({ port, host: "127.0.0.1" }, () => resolve(connected));
    connected.once("error", reject);
  });
  const seen = { received: "", error: undefined as string | undefined };
  socket.on("data", (chunk) => (seen.received += chunk.toString("latin1")));
  socket.on("error", (error: NodeJS.ErrnoException) => (seen.error = error.code));
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  const firstAnswer = new Promise<void>((resolve) => socket.once("data", () => resolve()));
  socket.write(REQUEST);
  await firstAnswer;
  return { socket, seen, closed };
}

/** The status lines of the answers in what a connection received (their bodies hold none). */
function statusLines(received: string): string[] {
  return received.match(/HTTP\/1\.1 \d{3} [^\r]*/g) ?? [];
}

it("answers requests that arrived on idle keep-alive connections while the loop was blocked past the linger", async () => {
  const port = Number(new URL(fresh.registry.url).port);
  const connections = await Promise.all(Array.from({ length: CONNECTIONS }, () => answeredConnection(port)));
  for (const { seen } of connections) expect(statusLines(seen.received)).toEqual([expect.stringMatching(/^HTTP\/1\.1 200 /)]);
  const closing = fresh.registry.close();
  // Let the shutdown begin, then block from the loop's check phase, so the next thing the loop
  // runs is the next turn's timers (the idle check among them), before any I/O.
  await new Promise((resolve) => setTimeout(resolve, 20));
  await new Promise((resolve) => setImmediate(resolve));
  for (const { socket } of connections) socket.write(REQUEST);
  const until = Date.now() + 600;
  while (Date.now() < until) {
    /* busy: the event loop is starved for longer than the linger */
  }
  await Promise.all(connections.map(({ closed }) => closed));
  await closing;
  for (const { seen } of connections) {
    expect(seen.error).toBeUndefined();
    expect(statusLines(seen.received)).toEqual([
      expect.stringMatching(/^HTTP\/1\.1 200 /),
      expect.stringMatching(/^HTTP\/1\.1 (200|503) /),
    ]);
  }
});

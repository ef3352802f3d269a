import net from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startRegistryOnFreshDatabase, type FreshRegistry } from "../support/registry-fixture.js";

/**
 * A shutdown whose event loop is blocked for longer than the linger (a process starved of CPU):
 * requests that reached the kernel meanwhile on connections the server had accepted must still be
 * read and answered, not reset. Timers run before I/O in a turn of the loop, so a linger measured
 * only by the clock would see "nothing read" for bytes the kernel has held all along.
 */

let fresh: FreshRegistry;
beforeAll(async () => {
  fresh = await startRegistryOnFreshDatabase();
});
afterAll(async () => {
  await fresh?.db.drop();
});

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: "127.0.0.1" }, () => resolve(socket));
    socket.once("error", reject);
  });
}

/** What came back on a socket: the first bytes of an answer, or the error that ended it. */
function outcome(socket: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    let received = "";
    socket.on("data", (chunk) => (received += chunk.toString("latin1")));
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(`error ${error.code}`));
    socket.once("close", () => resolve(received.split("\r\n")[0] ?? ""));
  });
}

it("answers the requests that arrived on accepted connections while the loop was blocked past the linger", async () => {
  const port = Number(new URL(fresh.registry.url).port);
  const sockets = await Promise.all(Array.from({ length: 8 }, () => connect(port)));
  // Let the server accept them all.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const outcomes = sockets.map(outcome);
  const closing = fresh.registry.close();
  // Let the shutdown begin (its first steps are asynchronous). Then block from the loop's check
  // phase, so the next thing the loop runs is the next turn's timers, before any I/O.
  await new Promise((resolve) => setTimeout(resolve, 20));
  await new Promise((resolve) => setImmediate(resolve));
  for (const socket of sockets) socket.write("GET /healthz HTTP/1.1\r\nHost: registry.test\r\n\r\n");
  // Block this process (client and server alike) for longer than the shutdown linger.
  const until = Date.now() + 600;
  while (Date.now() < until) {
    /* busy: the event loop is starved */
  }
  const results = await Promise.all(outcomes);
  await closing;
  for (const result of results) expect(result).toMatch(/^HTTP\/1\.1 (200|503) /);
});

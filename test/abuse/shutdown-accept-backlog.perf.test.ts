import net from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startRegistryOnFreshDatabase, type FreshRegistry } from "../support/registry-fixture.js";

/**
 * A shutdown that begins with connections still queued in the listener's backlog, on a loaded
 * server: libuv accepts one connection per turn of the event loop, so when each turn takes a few
 * milliseconds, a backlog of completed connections (whose clients have already sent their
 * requests) outlasts any fixed linger. Each must still be accepted and answered, not reset by the
 * listener closing over it.
 */

const CONNECTIONS = 60;
/** How long each turn of the loop is kept busy: a server working through a burst of requests. */
const TURN_MS = 10;

let fresh: FreshRegistry;
beforeAll(async () => {
  fresh = await startRegistryOnFreshDatabase();
});
afterAll(async () => {
  await fresh?.db.drop();
});

/** Keeps every turn of the event loop busy for TURN_MS until stopped. */
function loadTheLoop(): () => void {
  let running = true;
  const turn = () => {
    if (!running) return;
    const until = Date.now() + TURN_MS;
    while (Date.now() < until) {
      /* busy: one turn of a loaded server */
    }
    setImmediate(turn);
  };
  setImmediate(turn);
  return () => (running = false);
}

/** Connects and sends a request; resolves once the request is handed to the kernel. */
function sendRequest(port: number): Promise<{ socket: net.Socket; answer: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: "127.0.0.1" }, () => {
      socket.off("error", reject);
      let received = "";
      const answer = new Promise<string>((settle) => {
        socket.on("data", (chunk) => (received += chunk.toString("latin1")));
        socket.once("error", (error: NodeJS.ErrnoException) => settle(`error ${error.code}`));
        socket.once("close", () => settle(received.split("\r\n")[0] ?? ""));
      });
      socket.write("GET /healthz HTTP/1.1\r\nHost: registry.test\r\n\r\n", () => resolve({ socket, answer }));
    });
    socket.once("error", reject);
  });
}

it("accepts and answers every connection still in the backlog when the shutdown begins", async () => {
  const port = Number(new URL(fresh.registry.url).port);
  const stopLoad = loadTheLoop();
  try {
    const sent = await Promise.all(Array.from({ length: CONNECTIONS }, () => sendRequest(port)));
    const closing = fresh.registry.close();
    const answers = await Promise.all(sent.map(({ answer }) => answer));
    await closing;
    const unanswered = answers.filter((answer) => !/^HTTP\/1\.1 (200|503) /.test(answer));
    expect(unanswered, `${unanswered.length} of ${CONNECTIONS} not answered`).toEqual([]);
  } finally {
    stopLoad();
  }
});

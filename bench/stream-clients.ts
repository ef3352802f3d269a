/**
 * SSE clients for bench/stream-bench.ts, in a process of their own so that receiving thousands of
 * events a second does not delay the bench's writer and its timings. Started with fork(): opens
 * `count` streams after `after` from loopback addresses 127.0.1.<first>..., says "ready", answers
 * "counts" with each stream's events so far, and exits on "close".
 *
 * Usage (through bin/run-ts.js): stream-clients.ts <url> <count> <after> <first address>
 */
import net from "node:net";

/** Streams per loopback address: under the default MAX_STREAMS_PER_IP (32). */
export const STREAMS_PER_ADDRESS = 25;
const MARKER = "event: change\n";

interface CountingStream {
  readonly events: () => number;
  close(): void;
}

function openCountingStream(url: string, after: number, localAddress: string): Promise<CountingStream> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port), localAddress });
    let events = 0;
    let carry = "";
    let started = false;
    socket.setEncoding("utf8");
    socket.on("error", reject);
    socket.on("connect", () => socket.write(`GET /v1/changes/stream?after=${after} HTTP/1.1\r\nhost: ${hostname}\r\n\r\n`));
    socket.on("data", (chunk: string) => {
      const text = carry + chunk;
      if (!started) {
        if (!text.startsWith("HTTP/1.1 200")) {
          reject(new Error(`stream from ${localAddress}: ${text.slice(0, 200)}`));
          socket.destroy();
          return;
        }
        started = true;
        resolve({ events: () => events, close: () => socket.destroy() });
      }
      for (let at = text.indexOf(MARKER); at >= 0; at = text.indexOf(MARKER, at + 1)) events += 1;
      // A marker cut by the chunk's end is completed by the next; one already counted cannot fit.
      carry = text.slice(-(MARKER.length - 1));
    });
  });
}

const [url, count, after, first] = process.argv.slice(2);
const streams: CountingStream[] = [];
for (let i = 0; i < Number(count); i += 1) {
  const address = `127.0.1.${Number(first) + Math.floor(i / STREAMS_PER_ADDRESS)}`;
  streams.push(await openCountingStream(url!, Number(after), address));
}
process.on("message", (message) => {
  if (message === "counts") process.send!({ counts: streams.map((stream) => stream.events()) });
  if (message === "close") {
    for (const stream of streams) stream.close();
    process.disconnect();
  }
});
process.send!("ready");

/**
 * The floor under the stream part's create target: a bare node:http server whose only work per
 * "create" is what no SSE fan-out can avoid. A POST waits `commitMs` (the commit a create awaits),
 * answers 201, then writes one event of `eventBytes` to each open SSE response: one socket write
 * per stream per event. Creates are sent one at a time, with no stream open and with `streams`
 * following, from a client process separate from the streams' (bench/stream-clients.ts), as in
 * bench/stream-bench.ts. The ratio of the two p50s is what that fan-out costs the creates.
 *
 * The writes go through each response in one turn unless told otherwise: --socket writes one
 * Buffer, framed as a chunk once, straight to every socket; --chunk=N writes N streams a turn, so
 * the next create is read and waits out its commit between them. Both are cheaper than the
 * default, which is therefore a floor only for a fan-out that writes the same way.
 *
 * Usage: node bin/run-ts.js bench/sse-fanout-floor.ts [streams=500] [creates=500] [commitMs=3] [eventBytes=1500]
 *        [--socket] [--chunk=N]
 * (commitMs defaults to about what a create takes the registry with no stream open, so the two
 * bases match: docs/performance.md#change-feed-streams).
 */
import { fork } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { percentileOfSorted, round } from "./stats.js";

const [streams = 500, creates = 500, commitMs = 3, eventBytes = 1500] = process.argv
  .slice(2)
  .filter((arg) => !arg.startsWith("--"))
  .map(Number);
/**
 * How each event reaches a stream: "response" writes the event's text through each ServerResponse
 * (chunk framing, a cork and a nextTick uncork per write); "socket" writes one Buffer, framed as
 * an HTTP/1.1 chunk once, straight to every stream's socket.
 */
const mode = process.argv.includes("--socket") ? "socket" : "response";
/** Streams written to in one turn of the event loop (--chunk=N); all of them in one turn when 0. */
const chunk = Number(process.argv.find((arg) => arg.startsWith("--chunk="))?.slice("--chunk=".length) ?? 0);

async function serve(): Promise<void> {
  const open = new Set<http.ServerResponse>();
  let index = 0;
  const data = "x".repeat(eventBytes);
  const server = http.createServer((req, res) => {
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(": changes\n\n");
      open.add(res);
      res.on("close", () => open.delete(res));
      return;
    }
    req.resume();
    req.on("end", () => {
      setTimeout(() => {
        res.writeHead(201, { "content-type": "application/json" }).end("{}");
        const event = `id: ${index++}\nevent: change\ndata: ${data}\n\n`;
        const bytes = mode === "socket" ? Buffer.from(`${Buffer.byteLength(event).toString(16)}\r\n${event}\r\n`) : event;
        const write = (stream: http.ServerResponse) => (mode === "socket" ? stream.socket!.write(bytes) : stream.write(bytes));
        const list = [...open];
        const pass = (from: number) => {
          const to = chunk === 0 ? list.length : Math.min(list.length, from + chunk);
          for (let i = from; i < to; i += 1) write(list[i]!);
          if (to < list.length) setImmediate(pass, to);
        };
        setImmediate(pass, 0);
      }, commitMs);
    });
  });
  server.listen(0, "127.0.0.1", () => process.send!((server.address() as AddressInfo).port));
}

async function oneAtATime(url: string, count: number): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const sent = performance.now();
    await new Promise<void>((resolve, reject) => {
      const request = http.request(url, { method: "POST", agent }, (response) => {
        response.resume();
        response.on("end", resolve);
      });
      request.on("error", reject);
      request.end("{}");
    });
    latencies.push(performance.now() - sent);
  }
  agent.destroy();
  return latencies.sort((a, b) => a - b);
}

if (process.argv.includes("--serve")) {
  await serve();
} else {
  const server = fork("bin/run-ts.js", ["bench/sse-fanout-floor.ts", "--serve", `--${mode}`, `--chunk=${chunk}`], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const port = await new Promise<number>((resolve) => server.once("message", (message) => resolve(message as number)));
  const url = `http://127.0.0.1:${port}`;
  await oneAtATime(url, 200);
  const alone = await oneAtATime(url, creates);
  const clients = fork("bin/run-ts.js", ["bench/stream-clients.ts", url, String(streams), "0", "1"], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  await new Promise((resolve) => clients.once("message", resolve));
  await sleep(500);
  const followed = await oneAtATime(url, creates);
  const p50 = (sorted: number[]) => round(percentileOfSorted(sorted, 50), 2);
  const p99 = (sorted: number[]) => round(percentileOfSorted(sorted, 99), 2);
  console.log(
    `floor (${mode} writes, ${chunk === 0 ? "all" : chunk} a turn), ${creates} creates one at a time, commit ${commitMs} ms, events of ${eventBytes} bytes`,
  );
  console.log(`  no stream:          p50 ${p50(alone)} ms, p99 ${p99(alone)} ms`);
  console.log(`  ${streams} SSE streams:   p50 ${p50(followed)} ms, p99 ${p99(followed)} ms: ${round(p50(followed) / p50(alone), 2)}x`);
  clients.send("close");
  server.kill();
}

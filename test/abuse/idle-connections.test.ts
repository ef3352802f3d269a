import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addressKey } from "../../src/edge/client-address.js";
import { startTestRegistry, type TestRegistry } from "../support/registry-fixture.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";

/**
 * Idle and slow connections are closed at the front (issue 9, defect 1), on both protocols of the
 * one port, while ordinary requests keep being answered; and one address cannot hold more than its
 * share of connections. The registry runs with short timeouts so that this takes seconds.
 */

const LIMITS = {
  firstBytesTimeoutMs: 1_000,
  headersTimeoutMs: 1_000,
  requestTimeoutMs: 2_000,
  idleTimeoutMs: 1_500,
  http2PingIntervalMs: 0,
  maxConnectionsPerIp: 0,
};
/** A deadline may be overshot by the sweep (a quarter of the shortest timeout here) and a busy machine. */
const LATE_MS = 3_000;
/** Timers fire late, never early; this only absorbs the gap between what the client and the server each saw first. */
const EARLY_MS = 250;
/** The client stops waiting after this (the longest deadline, a stream's and then its session's, and then some). */
const GIVE_UP_MS = LIMITS.requestTimeoutMs + LIMITS.idleTimeoutMs + LATE_MS + 1_000;
const SOCKETS_PER_KIND = 10;
const TRICKLE_MS = 200;

let db: TestDatabase;
let registry: TestRegistry;
let url: string;
let port: number;

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database, LIMITS);
  url = registry.url;
  port = Number(new URL(url).port);
});

afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

/** How one attacking connection ended, timed from when its slow phase began (Infinity: the client gave up first). */
interface Ending {
  readonly closedAfterMs: number;
  /** The first bytes the server sent, if any (a response, an HTTP/2 SETTINGS frame...). */
  readonly received: string;
  readonly error?: string;
}

/** What an attacker sends: it may start a trickle (a write every TRICKLE_MS), and says when its slow phase began. */
type Act = (socket: net.Socket, trickle: (text: string) => void) => Promise<number> | number;

/** A raw TCP connection doing `act`, and how it ended. */
function rawConnection(act: Act) {
  return new Promise<Ending>((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let received = Buffer.alloc(0);
    let error: string | undefined;
    let phaseStart = Date.now();
    let trickle: NodeJS.Timeout | undefined;
    let gaveUp = false;
    const giveUp = setTimeout(() => {
      gaveUp = true;
      socket.destroy();
    }, GIVE_UP_MS);
    socket.on("data", (chunk: Buffer) => (received = Buffer.concat([received, chunk])));
    socket.on("error", (cause: NodeJS.ErrnoException) => (error = cause.code ?? cause.message));
    const startTrickle = (text: string) => {
      trickle = setInterval(() => socket.writable && socket.write(text), TRICKLE_MS);
    };
    socket.on("connect", async () => {
      phaseStart = await act(socket, startTrickle);
    });
    socket.on("close", () => {
      clearInterval(trickle);
      clearTimeout(giveUp);
      resolve({ closedAfterMs: gaveUp ? Infinity : Date.now() - phaseStart, received: received.toString("latin1"), error });
    });
  });
}

/** Reads until `marker` has arrived on the socket. */
function waitFor(socket: net.Socket, marker: string): Promise<void> {
  return new Promise((resolve) => {
    let seen = "";
    const onData = (chunk: Buffer) => {
      seen += chunk.toString("latin1");
      if (!seen.includes(marker)) return;
      socket.off("data", onData);
      resolve();
    };
    socket.on("data", onData);
  });
}

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/** An HTTP/2 frame (RFC 9113 §4.1). */
function frame(type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(streamId, 5);
  return Buffer.concat([header, payload]);
}
const SETTINGS = 0x4;
const HEADERS = 0x1;
/** HPACK static table index 2, ":method: GET" (RFC 7541 Appendix A): a header block that never ends. */
const INDEXED_METHOD_GET = Buffer.from([0x82]);

/** The attacks, each with the deadline that must end it. */
const ATTACKS: Array<{ name: string; deadlineMs: number; act: Act; expectReceived?: RegExp }> = [
  { name: "a silent connection", deadlineMs: LIMITS.firstBytesTimeoutMs, act: () => Date.now() },
  {
    name: 'a connection that sends only "PR"',
    deadlineMs: LIMITS.firstBytesTimeoutMs,
    act: (socket) => {
      socket.write("PR");
      return Date.now();
    },
  },
  {
    name: "HTTP/1.1 headers one line at a time",
    deadlineMs: LIMITS.headersTimeoutMs,
    expectReceived: /^HTTP\/1\.1 408 /,
    act: (socket, trickle) => {
      socket.write("GET /healthz HTTP/1.1\r\nHost: registry\r\n");
      trickle("X-Slow: yes\r\n");
      return Date.now();
    },
  },
  {
    name: "an HTTP/1.1 body one byte at a time",
    deadlineMs: LIMITS.requestTimeoutMs,
    expectReceived: /^HTTP\/1\.1 408 /,
    act: (socket, trickle) => {
      socket.write("POST /v1/discover HTTP/1.1\r\nHost: registry\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{");
      trickle(" ");
      return Date.now();
    },
  },
  {
    name: "an idle HTTP/1.1 keep-alive connection",
    deadlineMs: LIMITS.idleTimeoutMs,
    expectReceived: /^HTTP\/1\.1 200 /,
    act: async (socket) => {
      const answered = waitFor(socket, '"status":"ok"');
      socket.write("GET /healthz HTTP/1.1\r\nHost: registry\r\n\r\n");
      await answered;
      return Date.now();
    },
  },
  {
    // node's own keep-alive timer restarts on every byte, so only a header deadline ends this.
    name: "a keep-alive connection whose next request's headers trickle in",
    deadlineMs: LIMITS.headersTimeoutMs,
    expectReceived: /^HTTP\/1\.1 200 [\s\S]*HTTP\/1\.1 408 /,
    act: async (socket, trickle) => {
      const answered = waitFor(socket, '"status":"ok"');
      socket.write("GET /healthz HTTP/1.1\r\nHost: registry\r\n\r\n");
      await answered;
      socket.write("GET /healthz HTTP/1.1\r\n");
      trickle("X-Slow: yes\r\n");
      return Date.now();
    },
  },
  {
    name: "an HTTP/2 session that opens no stream",
    deadlineMs: LIMITS.idleTimeoutMs,
    act: (socket) => {
      socket.write(Buffer.concat([PREFACE, frame(SETTINGS, 0, 0)]));
      return Date.now();
    },
  },
  {
    name: "an HTTP/2 header block that never ends (no END_HEADERS, no CONTINUATION)",
    deadlineMs: LIMITS.idleTimeoutMs,
    act: (socket) => {
      socket.write(Buffer.concat([PREFACE, frame(SETTINGS, 0, 0), frame(HEADERS, 0, 1, INDEXED_METHOD_GET)]));
      return Date.now();
    },
  },
];

/** An HTTP/2 stream whose request body trickles in; resolves with how and when it was closed. */
function slowHttp2Body(): Promise<{ closedAfterMs: number; rstCode: number | undefined; sessionClosedAfterMs: Promise<number> }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const session = http2.connect(url);
    session.on("error", () => {});
    let gaveUp = false;
    const giveUp = setTimeout(() => {
      gaveUp = true;
      session.destroy();
    }, GIVE_UP_MS);
    const sessionClosedAfterMs = new Promise<number>((done) =>
      session.on("close", () => {
        clearTimeout(giveUp);
        done(gaveUp ? Infinity : Date.now() - started);
      }),
    );
    const stream = session.request(
      { ":method": "POST", ":path": "/v1/discover", "content-type": "application/json" },
      { endStream: false },
    );
    stream.on("error", () => {});
    stream.write("{");
    const timer = setInterval(() => !stream.destroyed && stream.write(" "), TRICKLE_MS);
    stream.on("close", () => {
      clearInterval(timer);
      resolve({ closedAfterMs: gaveUp ? Infinity : Date.now() - started, rstCode: stream.rstCode, sessionClosedAfterMs });
    });
  });
}

const show = (value: unknown) => JSON.stringify(value, (_key, v: unknown) => (v === Infinity ? "still open" : v));

/** An ordinary request on a fresh connection of its own (no keep-alive race with the idle timeout). */
function http1Healthz(localAddress?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.get(
      `${url}/healthz`,
      { agent: false, headers: { connection: "close" }, localAddress, timeout: 5_000 },
      (response) => {
        response.resume();
        response.on("end", () => resolve(response.statusCode ?? 0));
      },
    );
    request.on("timeout", () => request.destroy(new Error("no answer within 5 s")));
    request.on("error", reject);
  });
}

function http2Healthz(): Promise<number> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    session.on("error", reject);
    const stream = session.request({ ":path": "/healthz" });
    let status = 0;
    stream.on("response", (headers) => (status = Number(headers[":status"])));
    stream.resume();
    stream.on("end", () => {
      session.close();
      resolve(status);
    });
    stream.on("error", reject);
    stream.setTimeout(5_000, () => stream.destroy(new Error("no answer within 5 s")));
  });
}

describe("idle and slow connections", () => {
  it("are closed within their deadlines on HTTP/1.1 and HTTP/2, while ordinary requests keep being answered", async () => {
    const endings = ATTACKS.map((attack) => ({
      attack,
      endings: Array.from({ length: SOCKETS_PER_KIND }, () => rawConnection(attack.act)),
    }));
    const slowStreams = Array.from({ length: SOCKETS_PER_KIND }, () => slowHttp2Body());
    const all = Promise.all([...endings.flatMap(({ endings }) => endings), ...slowStreams]);
    let attackOver = false;
    void all.then(() => (attackOver = true));

    // Ordinary traffic for as long as the attack lasts.
    const answers: number[] = [];
    while (!attackOver) {
      answers.push(...(await Promise.all([http1Healthz(), http2Healthz()])));
      await sleep(100);
    }
    await all;
    expect(answers.length).toBeGreaterThan(4);
    // Each closing was counted by its reason.
    expect(await refusals(registry, "first-bytes-timeout")).toBeGreaterThanOrEqual(SOCKETS_PER_KIND);
    expect(await refusals(registry, "headers-timeout")).toBeGreaterThanOrEqual(SOCKETS_PER_KIND);
    expect(await refusals(registry, "request-timeout")).toBeGreaterThanOrEqual(SOCKETS_PER_KIND);
    expect(
      answers.every((status) => status === 200),
      JSON.stringify(answers),
    ).toBe(true);

    for (const { attack, endings: pending } of endings) {
      for (const ending of await Promise.all(pending)) {
        const detail = `${attack.name}: ${show(ending)}`;
        expect(ending.closedAfterMs, detail).toBeGreaterThanOrEqual(attack.deadlineMs - EARLY_MS);
        expect(ending.closedAfterMs, detail).toBeLessThan(attack.deadlineMs + LATE_MS);
        if (attack.expectReceived !== undefined) expect(ending.received, detail).toMatch(attack.expectReceived);
      }
    }
    for (const stream of await Promise.all(slowStreams)) {
      const detail = `a slow HTTP/2 request body: ${show(stream)}`;
      expect(stream.closedAfterMs, detail).toBeGreaterThanOrEqual(LIMITS.requestTimeoutMs - EARLY_MS);
      expect(stream.closedAfterMs, detail).toBeLessThan(LIMITS.requestTimeoutMs + LATE_MS);
      expect(stream.rstCode, detail).toBe(http2.constants.NGHTTP2_CANCEL);
      // With its only stream gone, the session is idle, and goes in turn.
      expect(await stream.sessionClosedAfterMs, detail).toBeLessThan(LIMITS.requestTimeoutMs + LIMITS.idleTimeoutMs + LATE_MS);
    }
  }, 30_000);

  it("keeps busy connections: a request that takes its time is not an idle connection", async () => {
    // A body sent in two halves, the second after most of the header deadline: slow, but on time.
    const ending = await rawConnection(async (socket) => {
      const answered = waitFor(socket, "\r\n\r\n");
      socket.write(
        "POST /v1/discover HTTP/1.1\r\nHost: registry\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{",
      );
      await sleep(LIMITS.headersTimeoutMs * 0.8);
      socket.write("}");
      await answered;
      return Date.now();
    });
    expect(ending.received).toMatch(/^HTTP\/1\.1 200 /);
  });
});

describe("HTTP/2 PING", () => {
  let pinging: TestRegistry;
  const INTERVAL_MS = 500;

  beforeAll(async () => {
    // Idle sessions stay: only the PING can tell a dead peer from a quiet one here.
    pinging = await startTestRegistry(db.database, { ...LIMITS, idleTimeoutMs: 60_000, http2PingIntervalMs: INTERVAL_MS });
  });
  afterAll(() => pinging?.close());

  it("drops a session whose peer stops answering PINGs, and keeps one that answers", async () => {
    const pingPort = Number(new URL(pinging.url).port);
    const started = Date.now();
    // node's client acknowledges PINGs by itself.
    const alive = http2.connect(pinging.url);
    let aliveClosed = false;
    alive.on("close", () => (aliveClosed = true));
    alive.on("error", () => {});
    // A peer that speaks HTTP/2 once, then never answers anything (as a vanished host would).
    const deadClosedAfterMs = await new Promise<number>((resolve) => {
      const socket = net.connect(pingPort, "127.0.0.1", () => socket.write(Buffer.concat([PREFACE, frame(SETTINGS, 0, 0)])));
      socket.on("error", () => {});
      // What it is sent is read and dropped: unread, the server's FIN would never surface as "close".
      socket.resume();
      const giveUp = setTimeout(() => socket.destroy(new Error("still open")), 2 * INTERVAL_MS + LATE_MS + 1_000);
      let gaveUp = false;
      socket.on("error", (error) => (gaveUp = error.message === "still open"));
      socket.on("close", () => {
        clearTimeout(giveUp);
        resolve(gaveUp ? Infinity : Date.now() - started);
      });
    });
    // Unanswered for one interval after a PING sent at most one interval (and a sweep) in.
    expect(deadClosedAfterMs).toBeGreaterThanOrEqual(2 * INTERVAL_MS - EARLY_MS);
    expect(deadClosedAfterMs).toBeLessThan(2 * INTERVAL_MS + LATE_MS);
    await sleep(4 * INTERVAL_MS);
    expect(aliveClosed).toBe(false);
    alive.close();
  });
});

/** The registry's count of connections refused for `reason`, scraped from /metrics over a connection from `localAddress`. */
async function refusals(target: TestRegistry, reason: string, localAddress = "127.0.0.1"): Promise<number> {
  const text = await new Promise<string>((resolve, reject) => {
    http
      .get(target.running.metricsUrl, { agent: false, localAddress }, (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => (body += chunk));
        response.on("end", () => resolve(body));
      })
      .on("error", reject);
  });
  const series = `registry_connections_refused_total{reason="${reason}"} `;
  const line = text.split("\n").find((candidate) => candidate.startsWith(series));
  return line === undefined ? 0 : Number(line.slice(series.length));
}

describe("connections per client address", () => {
  let capped: TestRegistry;
  let cappedPort: number;
  const PER_IP = 5;
  const TOTAL = 8;

  beforeAll(async () => {
    capped = await startTestRegistry(db.database, { maxConnectionsPerIp: PER_IP, maxConnections: TOTAL, trustProxy: ["127.0.0.3"] });
    cappedPort = Number(new URL(capped.url).port);
  });
  afterAll(() => capped?.close());

  /** A keep-alive connection that has had one answer (so the server has certainly taken it), held open. */
  async function held(localAddress: string) {
    const socket = net.connect({ port: cappedPort, host: "127.0.0.1", localAddress });
    socket.on("error", () => {});
    const answered = waitFor(socket, '"status":"ok"');
    socket.write("GET /healthz HTTP/1.1\r\nHost: registry\r\n\r\n");
    await answered;
    return socket;
  }

  /** One request on a new connection from `localAddress`: its status, or how the connection ended without one. */
  function attempt(localAddress: string): Promise<string> {
    return new Promise((resolve) => {
      const request = http.get(`${capped.url}/healthz`, { agent: false, localAddress, headers: { connection: "close" } }, (response) => {
        response.resume();
        response.on("end", () => resolve(String(response.statusCode)));
      });
      request.on("error", (error: NodeJS.ErrnoException) => resolve(`refused: ${error.code ?? error.message}`));
    });
  }

  it("refuses the connection after an address's cap, serves other addresses, and serves it again once it lets go", async () => {
    const refusedBefore = await refusals(capped, "address-cap");
    const mine = await Promise.all(Array.from({ length: PER_IP }, () => held("127.0.0.1")));
    expect(await attempt("127.0.0.1")).toMatch(/^refused: /);
    expect(await attempt("127.0.0.2")).toBe("200");
    // Counted for the operator (the scrape comes from another address, under the cap).
    expect(await refusals(capped, "address-cap", "127.0.0.5")).toBe(refusedBefore + 1);

    for (const socket of mine) socket.destroy();
    await sleep(200);
    expect(await attempt("127.0.0.1")).toBe("200");
  });

  it("exempts trusted proxies from the per-address cap, not from the total", async () => {
    const proxied = await Promise.all(Array.from({ length: TOTAL }, () => held("127.0.0.3")));
    expect(await attempt("127.0.0.3")).toMatch(/^refused: /);
    expect(await attempt("127.0.0.4")).toMatch(/^refused: /);

    for (const socket of proxied) socket.destroy();
    await sleep(200);
    expect(await attempt("127.0.0.4")).toBe("200");
    expect(await refusals(capped, "total-cap", "127.0.0.6")).toBeGreaterThanOrEqual(2);
  });

  it("counts IPv6 clients by their /64, and IPv4-mapped addresses as IPv4", () => {
    expect(addressKey("2001:db8:1:2:aaaa::1")).toBe(addressKey("2001:db8:1:2:bbbb:cccc:dddd:eeee"));
    expect(addressKey("2001:db8:1:2::1")).not.toBe(addressKey("2001:db8:1:3::1"));
    expect(addressKey("2001:0db8:0001:0002::")).toBe("2001:db8:1:2::/64");
    expect(addressKey("::1")).toBe("0:0:0:0::/64");
    expect(addressKey("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(addressKey("::ffff:192.0.2.7")).toBe("192.0.2.7");
    expect(addressKey("192.0.2.7")).toBe("192.0.2.7");
  });
});

import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { exchangeFromNode, exchangeFromStream, type ExchangeHooks, type HttpExchange } from "../../src/transport/http-exchange.js";
import { sendAtTurnEnd } from "../../src/transport/turn-end-writes.js";

describe("sendAtTurnEnd", () => {
  it("sends the answers of one turn together, in order, once the turn's other work is done", async () => {
    const events: string[] = [];
    sendAtTurnEnd({ send: () => events.push("a"), sendFailed: () => {} });
    sendAtTurnEnd({ send: () => events.push("b"), sendFailed: () => {} });
    events.push("rest of the turn");
    await Promise.resolve();
    events.push("microtasks");
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual(["rest of the turn", "microtasks", "a", "b"]);
  });

  it("an answer decided while answers are being sent goes out in the next turn, not lost", async () => {
    const events: string[] = [];
    sendAtTurnEnd({
      send: () => {
        events.push("first");
        sendAtTurnEnd({ send: () => events.push("queued while sending"), sendFailed: () => {} });
      },
      sendFailed: () => {},
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual(["first"]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual(["first", "queued while sending"]);
  });
});

// Bare node servers whose every request becomes an exchange answered by `answer`, with hooks that
// record what the exchanges report.
interface Reports {
  finished: { status: number | undefined; code: string | undefined }[];
  writeErrors: unknown[];
}

type Answer = (exchange: HttpExchange, transport: { destroy(): void; headersSent(): boolean }) => void;

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** Requests to this path have an observer that throws once their answer is written. */
const THROWING_OBSERVER_PATH = "/observer-throws";

function hooksFor(reports: Reports): ExchangeHooks {
  return {
    observer: {
      finished: (exchange, status) => {
        reports.finished.push({ status, code: exchange.observation.code });
        if (exchange.path === THROWING_OBSERVER_PATH) throw new Error("the observer failed");
      },
    },
    onWriteError: (error) => reports.writeErrors.push(error),
  };
}

async function http1Server(answer: Answer): Promise<{ url: string; reports: Reports }> {
  const reports: Reports = { finished: [], writeErrors: [] };
  const hooks = hooksFor(reports);
  const server = http.createServer((req, res) => {
    answer(exchangeFromNode(req, res, hooks), { destroy: () => res.destroy(), headersSent: () => res.headersSent });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  closers.push(async () => server.closeAllConnections());
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, reports };
}

async function http2Server(answer: Answer): Promise<{ url: string; reports: Reports }> {
  const reports: Reports = { finished: [], writeErrors: [] };
  const hooks = hooksFor(reports);
  const server = http2.createServer();
  server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, _flags: number, rawHeaders: string[]) => {
    stream.on("error", () => {});
    answer(exchangeFromStream(stream, headers, rawHeaders, hooks), {
      destroy: () => stream.close(http2.constants.NGHTTP2_CANCEL),
      headersSent: () => stream.headersSent,
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, reports };
}

async function http2Get(url: string): Promise<{ status?: number; body: string; error?: Error }> {
  const session = http2.connect(url);
  session.on("error", () => {});
  try {
    return await new Promise((resolve) => {
      const stream = session.request({ ":path": new URL(url).pathname });
      let status: number | undefined;
      let body = "";
      stream.on("response", (headers) => (status = Number(headers[":status"])));
      stream.on("data", (chunk: Buffer) => (body += chunk.toString()));
      stream.on("end", () => resolve({ status, body }));
      stream.on("error", (error) => resolve({ status, body, error }));
      stream.on("close", () => resolve({ status, body, ...(stream.rstCode ? { error: new Error(`reset ${stream.rstCode}`) } : {}) }));
    });
  } finally {
    session.close();
  }
}

const protocols = [
  {
    name: "HTTP/1.1",
    server: http1Server,
    get: async (url: string) => {
      try {
        const response = await fetch(url);
        return { status: response.status, body: await response.text() };
      } catch (error) {
        return { body: "", error: error as Error };
      }
    },
  },
  { name: "HTTP/2", server: http2Server, get: http2Get },
];

describe.each(protocols)("an exchange's answer over $name", ({ server, get }) => {
  it("is decided at once and leaves at the end of the turn, whole", async () => {
    const seen: { doneAfterRespond: boolean; sentAfterRespond: boolean }[] = [];
    const { url, reports } = await server((exchange, transport) => {
      exchange.respond(200, { "content-type": "text/plain" }, Buffer.from("hello"));
      seen.push({ doneAfterRespond: exchange.done, sentAfterRespond: transport.headersSent() });
    });
    const answer = await get(url);
    expect(answer).toEqual({ status: 200, body: "hello" });
    expect(seen).toEqual([{ doneAfterRespond: true, sentAfterRespond: false }]);
    expect(reports.finished).toEqual([{ status: 200, code: undefined }]);
  });

  it("a header node refuses resets the request, is reported once, and is logged as internal", async () => {
    const { url, reports } = await server((exchange) => {
      exchange.respond(200, { "x broken": "a name with a space" }, Buffer.from("never sent"));
    });
    const answer = await get(url);
    expect(answer.error).toBeInstanceOf(Error);
    expect(answer.body).toBe("");
    expect(reports.writeErrors).toHaveLength(1);
    expect(String(reports.writeErrors[0])).toMatch(/x broken/);
    expect(reports.finished).toEqual([{ status: undefined, code: "internal" }]);
  });

  it("an answer whose client left before the turn ended is logged as canceled, not as sent", async () => {
    const { url, reports } = await server((exchange, transport) => {
      exchange.observation.code = "ok";
      exchange.respond(200, { "content-type": "text/plain" }, Buffer.from("too late"));
      transport.destroy();
    });
    const answer = await get(url);
    expect(answer.status === undefined || answer.error !== undefined).toBe(true);
    for (let waited = 0; reports.finished.length === 0 && waited < 2_000; waited += 10)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(reports.finished).toEqual([{ status: undefined, code: "canceled" }]);
  });

  it("an answer whose sending throws does not hold back the other answers of its turn", async () => {
    // Twenty requests answered in one turn, so their answers leave in one batch, the one whose
    // observer throws first.
    const waiting: HttpExchange[] = [];
    const { url, reports } = await server((exchange) => {
      waiting.push(exchange);
      if (waiting.length < 20) return;
      waiting.sort((a, b) => Number(b.path === THROWING_OBSERVER_PATH) - Number(a.path === THROWING_OBSERVER_PATH));
      for (const each of waiting) each.respond(200, { "content-type": "text/plain" }, Buffer.from(each.path));
    });
    const paths = [THROWING_OBSERVER_PATH, ...Array.from({ length: 19 }, (_, index) => `/other-${index}`)];
    const answers = await Promise.all(paths.map((path) => get(`${url}${path}`)));
    expect(answers).toEqual(paths.map((path) => ({ status: 200, body: path })));
    expect(reports.writeErrors.map(String)).toEqual(["Error: the observer failed"]);
    expect(reports.finished).toHaveLength(20);
  });
});

import http from "node:http";
import https from "node:https";
import { LARGEST_ANSWER_BYTES, settingFlag, type MirrorSettings } from "./mirror-settings.js";
import { LogSourceError, MirrorRefusedError, MirrorStoppedError } from "./mirror-errors.js";

export type RequestTimeouts = Pick<MirrorSettings, "connectTimeout" | "idleTimeout" | "requestTimeout">;

export interface BoundedGetOptions {
  /** Largest successful answer read; a longer one is refused (MirrorRefusedError) as it arrives. */
  readonly maxBytes: number;
  readonly timeouts: RequestTimeouts;
  /** Aborts the request (MirrorStoppedError). */
  readonly signal?: AbortSignal;
}

/**
 * GET `url` with every wait and every byte bounded: a source that does not connect, goes quiet,
 * trickles, or sends more than an honest answer holds is given up on, never waited for or buffered
 * without end. No compression is asked for, so what is counted is what is kept. Redirects are not
 * followed: the address to mirror is the operator's choice. A non-2xx answer is a LogSourceError
 * quoting its start.
 */
export function boundedGet(url: URL, options: BoundedGetOptions): Promise<Uint8Array> {
  const { maxBytes, timeouts, signal } = options;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new MirrorStoppedError(`stopped before GET ${url}`));
    const timers = new Set<NodeJS.Timeout>();
    const after = (ms: number, error: () => Error): NodeJS.Timeout => {
      const timer = setTimeout(() => settle(error()), ms);
      timers.add(timer);
      return timer;
    };
    const onAbort = () => settle(new MirrorStoppedError(`stopped during GET ${url}`));
    let settled = false;
    const settle = (outcome: Error | Uint8Array) => {
      if (settled) return;
      settled = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      signal?.removeEventListener("abort", onAbort);
      if (outcome instanceof Uint8Array) return resolve(outcome);
      // Whatever is left of the answer is not wanted, and the connection is not reused.
      request.destroy();
      reject(outcome);
    };
    let idle: NodeJS.Timeout | undefined;
    const stillAlive = () => {
      if (settled) return;
      if (idle !== undefined) {
        timers.delete(idle);
        clearTimeout(idle);
      }
      idle = after(
        timeouts.idleTimeout,
        () => new LogSourceError(`GET ${url}: the source sent nothing for ${timeouts.idleTimeout} ms (${settingFlag("idleTimeout")})`),
      );
    };

    const client = url.protocol === "https:" ? https : http;
    const request = client.get(url, { headers: { "user-agent": "registry-mirror", "accept-encoding": "identity" } });
    signal?.addEventListener("abort", onAbort, { once: true });
    after(
      timeouts.requestTimeout,
      () =>
        new LogSourceError(
          `GET ${url}: the answer took longer than ${timeouts.requestTimeout} ms in all (${settingFlag("requestTimeout")})`,
        ),
    );
    const connecting = after(
      timeouts.connectTimeout,
      () => new LogSourceError(`GET ${url}: no connection within ${timeouts.connectTimeout} ms (${settingFlag("connectTimeout")})`),
    );
    request.on("socket", (socket) => {
      const connected = () => {
        timers.delete(connecting);
        clearTimeout(connecting);
        stillAlive();
      };
      if (!socket.connecting) connected();
      else socket.once(url.protocol === "https:" ? "secureConnect" : "connect", connected);
    });
    request.on("error", (error) => settle(new LogSourceError(`${url.origin} cannot be reached: ${error.message}`)));
    request.on("response", (response) => {
      stillAlive();
      const status = response.statusCode ?? 0;
      const ok = status >= 200 && status < 300;
      const limit = ok ? maxBytes : LARGEST_ANSWER_BYTES.errorText;
      const tooLarge = () =>
        new MirrorRefusedError(`GET ${url}: the source's answer is longer than ${maxBytes} bytes, the most read for this request`);
      if (ok && Number(response.headers["content-length"]) > maxBytes) return settle(tooLarge());
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = () => {
        const body = Buffer.concat(chunks, size);
        if (ok) return settle(new Uint8Array(body.buffer, body.byteOffset, body.byteLength));
        const text = body.toString("utf8").slice(0, 300);
        const moved =
          status >= 300 && status < 400 && response.headers.location !== undefined
            ? ` (to ${response.headers.location}: give that address to --from)`
            : "";
        settle(new LogSourceError(`GET ${url} answered ${status}${moved}${text === "" ? "" : `: ${text}`}`));
      };
      response.on("data", (chunk: Buffer) => {
        stillAlive();
        if (size + chunk.length <= limit) {
          chunks.push(chunk);
          size += chunk.length;
        } else if (ok) {
          settle(tooLarge());
        } else {
          chunks.push(chunk.subarray(0, limit - size));
          size = limit;
          finish();
        }
      });
      response.on("end", finish);
      const brokeOff = () => settle(new LogSourceError(`GET ${url}: the answer broke off before its end`));
      response.on("error", brokeOff);
      response.on("close", () => (response.complete ? undefined : brokeOff()));
    });
  });
}

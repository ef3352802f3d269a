import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { AddressInfo, Socket } from "node:net";

/** Where requests go: HTTP/1.1 requests, and HTTP/2 streams (served without node's compatibility layer). */
export interface RequestHandlers {
  http1(req: http.IncomingMessage, res: http.ServerResponse): void;
  http2(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, flags: number, rawHeaders: string[]): void;
}

/** What the front enforces on every connection; the settings are described in docs/operations.md. */
export interface ConnectionLimits {
  readonly firstBytesTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly idleTimeoutMs: number;
  /** 0: no pings. */
  readonly http2PingIntervalMs: number;
  /** Open connections one address (see `addressKeyOf`) may hold; 0: no cap. */
  readonly maxConnectionsPerIp: number;
  /** Open connections in all; 0: no cap. */
  readonly maxConnections: number;
}

/**
 * Why the front closed a connection against its peer's will: a cap that refused it, or a
 * timeout it ran into. These are what a flood or a slow-loris attack looks like from inside.
 */
export type ConnectionRefusal =
  | "address-cap"
  | "total-cap"
  | "first-bytes-timeout"
  | "headers-timeout"
  | "request-timeout"
  | "ping-timeout";

/** Told of every connection the front refuses or times out. */
export type RefusalObserver = (reason: ConnectionRefusal) => void;

export interface ProtocolServerOptions {
  readonly onRefusal?: RefusalObserver;
  /**
   * The key a peer's connections are counted under for the per-address cap (an IPv6 /64 for
   * one), or undefined for a peer the cap exempts (a trusted proxy). By default, the address.
   */
  readonly addressKeyOf?: (address: string) => string | undefined;
}

export interface ProtocolServer {
  listen(port: number, host: string): Promise<AddressInfo>;
  /**
   * Stops serving: requests already received get their answer (with Connection: close, or after
   * a GOAWAY), later ones a 503 or a refused stream; whatever still runs after `graceMs` is cut.
   */
  close(graceMs?: number): Promise<void>;
}

/** The client preface of HTTP/2 with prior knowledge starts "PRI"; HTTP/1 methods never do. */
const HTTP2_PREFACE = Buffer.from("PRI * HTTP/2.0");

/** A connection told to close (FIN, GOAWAY) is destroyed if its peer has not closed it by then. */
const CLOSE_GRACE_MS = 1_000;

/**
 * On shutdown, bytes and connections that reached the kernel before the signal may not have been
 * read or accepted yet. A connection is only deemed idle, and the listener only closed, after this
 * much quiet, which spans several turns of the event loop even on a loaded machine.
 *
 * The listener's quiet is counted from its last accept, not from the signal: libuv accepts one
 * connection per turn of the event loop, so under load a backlog of connections the kernel has
 * completed (and whose clients have sent their requests) drains at the loop's pace, one every few
 * milliseconds. Closing the listener earlier would reset every connection still queued.
 */
export const SHUTDOWN_LINGER_MS = 250;

/** How often connections are checked while shutting down. */
const SHUTDOWN_TICK_MS = 25;

/** RFC 9113 §6.5.2 suggests no fewer than 100; nginx allows 128. It bounds a session's cost. */
const HTTP2_MAX_CONCURRENT_STREAMS = 128;

const REQUEST_TIMEOUT_RESPONSE = "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
const SHUTTING_DOWN_BODY = JSON.stringify({ code: "unavailable", message: "the server is shutting down", details: [] });

/** One accepted TCP connection, whatever its protocol turns out to be. */
interface Connection {
  readonly socket: Socket;
  readonly acceptedAt: number;
  /** The per-address count it is charged to; undefined for exempt peers (trusted proxies). */
  readonly addressKey: string | undefined;
  protocol: "unknown" | "http/1.1" | "h2";
  /** HTTP/1.1 requests whose response has not finished, each with when its bytes began. */
  readonly requests: Map<http.IncomingMessage, { res: http.ServerResponse; startedAt: number }>;
  /** HTTP/2 streams not closed yet, each with when it opened. */
  readonly streams: Map<http2.ServerHttp2Stream, number>;
  session?: http2.ServerHttp2Session;
  /** Since when nothing has been in progress. */
  idleSince: number;
  /** HTTP/1.1: bytes read when it became idle; more mean the next request has begun. */
  idleBytes: number;
  /** HTTP/1.1: when the first bytes of a request whose headers are not complete arrived. */
  headersSince: number | undefined;
  /** HTTP/2: when the unanswered PING was sent, and when the last one was answered. */
  pingSentAt: number | undefined;
  lastPingAt: number;
  /** When it was told to close; it is destroyed CLOSE_GRACE_MS later if still open. */
  closeRequestedAt: number | undefined;
}

/**
 * One port for HTTP/1.1 and cleartext HTTP/2 (h2c with prior knowledge, as gRPC uses): node's
 * http2 server cannot fall back to HTTP/1 without TLS, so a TCP front reads the first bytes of
 * each connection and hands the socket to the server that speaks its protocol.
 *
 * Handed-over sockets escape node's own headersTimeout and requestTimeout (its http server only
 * tracks connections it accepted itself), so the front keeps every deadline: a periodic sweep
 * over all connections, which also sees slow senders that keep a socket's inactivity timer alive.
 */
export function createProtocolServer(
  handlers: RequestHandlers,
  limits: ConnectionLimits,
  options: ProtocolServerOptions = {},
): ProtocolServer {
  const { onRefusal = () => {}, addressKeyOf = (address: string) => address } = options;
  // Advertised in Keep-Alive headers; the sweep enforces it (node's own timer restarts on every byte).
  const h1 = http.createServer({ keepAliveTimeout: limits.idleTimeoutMs });
  const h2 = http2.createServer({ settings: { maxConcurrentStreams: HTTP2_MAX_CONCURRENT_STREAMS } });
  const connections = new Map<Socket, Connection>();
  const perAddress = new Map<string, number>();
  let closingSince: number | undefined;
  let handingOver: Connection | undefined;
  /** When the listener last handed over a connection (including ones refused at once). */
  let lastAcceptAt = 0;
  let listenerClosed = false;

  h1.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
    const connection = connections.get(req.socket);
    if (connection !== undefined) trackHttp1Request(connection, req, res);
    if (closingSince === undefined) handlers.http1(req, res);
    else refuseWhileClosing(res);
  });
  h2.on("session", (session: http2.ServerHttp2Session) => {
    // Emitted synchronously by h2.emit("connection"), while the front hands the socket over.
    const connection = handingOver;
    if (connection === undefined) return;
    connection.session = session;
    connection.lastPingAt = Date.now();
    session.on("stream", (stream: http2.ServerHttp2Stream) => trackHttp2Stream(connection, stream));
    session.on("error", () => {});
    if (closingSince !== undefined) session.close();
  });
  h2.on("stream", handlers.http2);

  function trackHttp1Request(connection: Connection, req: http.IncomingMessage, res: http.ServerResponse) {
    connection.requests.set(req, { res, startedAt: connection.headersSince ?? Date.now() });
    connection.headersSince = undefined;
    res.once("close", () => {
      connection.requests.delete(req);
      if (connection.requests.size > 0) return;
      connection.idleSince = Date.now();
      connection.idleBytes = connection.socket.bytesRead;
    });
  }

  function trackHttp2Stream(connection: Connection, stream: http2.ServerHttp2Stream) {
    connection.streams.set(stream, Date.now());
    stream.once("close", () => {
      connection.streams.delete(stream);
      if (connection.streams.size === 0) connection.idleSince = Date.now();
    });
  }

  const front = net.createServer({ noDelay: true }, (socket) => {
    lastAcceptAt = Date.now();
    const connection = admit(socket);
    if (connection === undefined) return;
    socket.on("error", () => socket.destroy());
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const compared = Math.min(head.length, 3);
      const mayBeHttp2 = head.subarray(0, compared).equals(HTTP2_PREFACE.subarray(0, compared));
      if (mayBeHttp2 && head.length < 3) return;
      socket.off("data", onData);
      socket.pause();
      socket.unshift(head);
      const now = Date.now();
      connection.idleSince = now;
      // The HTTP/2 session takes the bytes already read from the socket's buffer and then reads
      // the native handle itself: resuming the JS stream here would hand those bytes to no one.
      if (mayBeHttp2) {
        connection.protocol = "h2";
        handingOver = connection;
        h2.emit("connection", socket);
        handingOver = undefined;
      } else {
        connection.protocol = "http/1.1";
        connection.headersSince = now;
        h1.emit("connection", socket);
        socket.resume();
      }
    };
    socket.on("data", onData);
  });
  if (limits.maxConnections > 0) front.maxConnections = limits.maxConnections;
  // Connections node itself drops at front.maxConnections.
  front.on("drop", () => {
    lastAcceptAt = Date.now();
    onRefusal("total-cap");
  });
  // After listening, the only errors are failed accepts (out of file descriptors, memory): libuv
  // keeps accepting afterwards, and unheard they would end the process.
  front.on("error", () => {});

  /** Registers a new connection, or closes it at once when its address already has its share. */
  function admit(socket: Socket): Connection | undefined {
    const address = socket.remoteAddress ?? "";
    const key = limits.maxConnectionsPerIp > 0 ? addressKeyOf(address) : undefined;
    if (key !== undefined) {
      const open = perAddress.get(key) ?? 0;
      if (open >= limits.maxConnectionsPerIp) {
        // Nothing is read from it: answering would mean holding it open, which is what the cap prevents.
        socket.on("error", () => {});
        socket.destroy();
        onRefusal("address-cap");
        return undefined;
      }
      perAddress.set(key, open + 1);
    }
    const now = Date.now();
    const connection: Connection = {
      socket,
      acceptedAt: now,
      addressKey: key,
      protocol: "unknown",
      requests: new Map(),
      streams: new Map(),
      idleSince: now,
      idleBytes: 0,
      headersSince: undefined,
      pingSentAt: undefined,
      lastPingAt: now,
      closeRequestedAt: undefined,
    };
    connections.set(socket, connection);
    socket.once("close", () => forget(connection));
    return connection;
  }

  function forget(connection: Connection) {
    connections.delete(connection.socket);
    const key = connection.addressKey;
    if (key === undefined) return;
    const left = (perAddress.get(key) ?? 1) - 1;
    if (left > 0) perAddress.set(key, left);
    else perAddress.delete(key);
  }

  function sweep() {
    const now = Date.now();
    if (closingSince !== undefined) maybeStopListening();
    for (const connection of connections.values()) {
      if (connection.socket.destroyed) continue;
      if (connection.closeRequestedAt !== undefined) {
        if (now - connection.closeRequestedAt > CLOSE_GRACE_MS) connection.socket.destroy();
      } else if (connection.protocol === "unknown") checkUndetected(connection, now);
      else if (connection.protocol === "http/1.1") checkHttp1(connection, now);
      else checkHttp2(connection, now);
    }
  }

  /** While closing: closes the listener once it has accepted nothing for the linger (see SHUTDOWN_LINGER_MS). */
  function maybeStopListening() {
    const quiet = () => Date.now() - Math.max(lastAcceptAt, closingSince ?? 0) >= SHUTDOWN_LINGER_MS;
    if (listenerClosed || !quiet()) return;
    // Checked again once this turn's I/O has run: a queued connection is accepted there.
    afterPendingIo(() => {
      if (!listenerClosed && quiet()) stopListening();
    });
  }

  function stopListening() {
    listenerClosed = true;
    front.close();
  }

  function checkUndetected(connection: Connection, now: number) {
    if (now - connection.acceptedAt > limits.firstBytesTimeoutMs) {
      connection.socket.destroy();
      onRefusal("first-bytes-timeout");
    }
    // While closing, a connection that has sent nothing after the linger never will in time.
    else if (
      closingSince !== undefined &&
      connection.socket.bytesRead === 0 &&
      now - Math.max(connection.acceptedAt, closingSince) >= SHUTDOWN_LINGER_MS
    ) {
      afterPendingIo(() => {
        if (connection.socket.bytesRead === 0) connection.socket.destroy();
      });
    }
  }

  function checkHttp1(connection: Connection, now: number) {
    for (const [req, { startedAt }] of connection.requests) {
      if (!req.complete && now - startedAt > limits.requestTimeoutMs) return timeOutHttp1(connection, "request-timeout");
    }
    if (connection.requests.size > 0) return;
    // The parser reads the socket natively, so new bytes show only in the count.
    if (connection.headersSince === undefined && connection.socket.bytesRead > connection.idleBytes) connection.headersSince = now;
    if (connection.headersSince !== undefined) {
      if (now - connection.headersSince > limits.headersTimeoutMs) timeOutHttp1(connection, "headers-timeout");
      return;
    }
    const idleFor = now - Math.max(connection.idleSince, closingSince ?? 0);
    if (idleFor > (closingSince === undefined ? limits.idleTimeoutMs : SHUTDOWN_LINGER_MS)) closeIfStillIdle(connection);
  }

  /**
   * Closes an idle HTTP/1.1 connection, but only once this turn's I/O has run (see afterPendingIo):
   * a request already in the kernel is then read and answered, where a FIN sent first would lose it.
   */
  function closeIfStillIdle(connection: Connection) {
    afterPendingIo(() => {
      const stillIdle = connection.requests.size === 0 && connection.socket.bytesRead === connection.idleBytes;
      if (stillIdle && connection.closeRequestedAt === undefined) requestClose(connection);
    });
  }

  /** As node answers its own request timeouts: a 408 if nothing was answered yet, then the socket goes. */
  function timeOutHttp1(connection: Connection, reason: ConnectionRefusal) {
    const answering = [...connection.requests.values()].some(({ res }) => res.headersSent);
    if (!answering && connection.socket.writable) connection.socket.write(REQUEST_TIMEOUT_RESPONSE);
    connection.socket.destroy();
    onRefusal(reason);
  }

  function checkHttp2(connection: Connection, now: number) {
    const session = connection.session;
    if (session === undefined) return void connection.socket.destroy();
    for (const [stream, openedAt] of connection.streams) {
      // remoteClose: the client has sent END_STREAM, so its request is complete.
      if (!stream.destroyed && !stream.state.remoteClose && now - openedAt > limits.requestTimeoutMs) {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        onRefusal("request-timeout");
      }
    }
    if (checkPing(connection, session, now) || connection.streams.size > 0) return;
    // Closing, the session had its GOAWAY at once; with its last stream done, its peer may go.
    if (closingSince !== undefined) requestClose(connection);
    else if (now - connection.idleSince > limits.idleTimeoutMs) {
      session.close();
      requestClose(connection);
    }
  }

  /** PINGs the session now and then; a peer that does not answer within an interval is gone. Says whether it was destroyed. */
  function checkPing(connection: Connection, session: http2.ServerHttp2Session, now: number): boolean {
    const interval = limits.http2PingIntervalMs;
    if (interval === 0 || session.destroyed) return false;
    if (connection.pingSentAt !== undefined) {
      if (now - connection.pingSentAt <= interval) return false;
      session.destroy();
      connection.socket.destroy();
      onRefusal("ping-timeout");
      return true;
    }
    if (now - connection.lastPingAt < interval) return false;
    connection.pingSentAt = now;
    try {
      session.ping((error) => {
        if (error !== null) return;
        connection.pingSentAt = undefined;
        connection.lastPingAt = Date.now();
      });
    } catch {
      // A session that is closing accepts no more PINGs; it goes away on its own.
      connection.pingSentAt = undefined;
    }
    return false;
  }

  function requestClose(connection: Connection) {
    connection.closeRequestedAt = Date.now();
    if (connection.protocol === "http/1.1") connection.socket.end();
  }

  let sweeper = setInterval(sweep, sweepInterval(limits));
  sweeper.unref();

  let closed: Promise<void> | undefined;

  function shutDown(graceMs: number): Promise<void> {
    closingSince = Date.now();
    const done = new Promise<void>((resolve) => front.once("close", () => resolve()));
    for (const connection of connections.values()) {
      connection.session?.close();
      // Responses not started yet tell their clients not to send more on the connection.
      for (const { res } of connection.requests.values()) if (!res.headersSent) res.setHeader("connection", "close");
    }
    clearInterval(sweeper);
    // Connections waiting in the backlog are accepted (and answered) until the listener is quiet.
    sweeper = setInterval(sweep, SHUTDOWN_TICK_MS);
    const deadline = setTimeout(() => {
      if (!listenerClosed) stopListening();
      for (const connection of connections.values()) connection.socket.destroy();
    }, graceMs);
    return done.finally(() => {
      clearTimeout(deadline);
      clearInterval(sweeper);
    });
  }

  return {
    listen(port, host) {
      return new Promise((resolve, reject) => {
        front.once("error", reject);
        front.listen(port, host, () => {
          front.off("error", reject);
          resolve(front.address() as AddressInfo);
        });
      });
    },
    close(graceMs = 5_000) {
      closed ??= shutDown(graceMs);
      return closed;
    },
  };
}

/** A 503 that tells the client its request was not processed and the connection is going. */
function refuseWhileClosing(res: http.ServerResponse) {
  res.writeHead(503, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(SHUTTING_DOWN_BODY),
    connection: "close",
  });
  res.end(SHUTTING_DOWN_BODY);
}

/**
 * Runs `action` once this turn of the event loop has read the sockets that are ready. Timers run
 * before I/O in a turn, so after the loop was blocked for longer than the linger, a timer would see
 * "nothing read" for bytes (and connections) that the kernel has held all along, and reset them.
 */
function afterPendingIo(action: () => void): void {
  setImmediate(action);
}

/** Often enough that no deadline is overshot by more than a quarter of the shortest one (and never by over a second). */
function sweepInterval(limits: ConnectionLimits): number {
  const deadlines = [limits.firstBytesTimeoutMs, limits.headersTimeoutMs, limits.requestTimeoutMs, limits.idleTimeoutMs];
  if (limits.http2PingIntervalMs > 0) deadlines.push(limits.http2PingIntervalMs);
  return Math.max(10, Math.min(1_000, Math.floor(Math.min(...deadlines) / 4)));
}

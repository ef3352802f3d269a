import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { AddressInfo, Socket } from "node:net";

export type RequestListener = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

export interface ProtocolServer {
  listen(port: number, host: string): Promise<AddressInfo>;
  /** Stops accepting, lets in-flight requests finish for up to `graceMs`, then cuts the rest. */
  close(graceMs?: number): Promise<void>;
}

/** The client preface of HTTP/2 with prior knowledge starts "PRI"; HTTP/1 methods never do. */
const HTTP2_PREFACE = Buffer.from("PRI * HTTP/2.0");

/**
 * One port for HTTP/1.1 and cleartext HTTP/2 (h2c with prior knowledge, as gRPC uses): node's
 * http2 server cannot fall back to HTTP/1 without TLS, so a TCP front reads the first bytes of
 * each connection and hands the socket to the server that speaks its protocol.
 */
export function createProtocolServer(listener: RequestListener): ProtocolServer {
  const h1 = http.createServer({ keepAliveTimeout: 65_000 }, listener);
  const h2 = http2.createServer({}, listener);
  const sockets = new Set<Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  // HTTP/1 sockets and their requests in flight. node only tracks connections of servers that
  // listen themselves (closeIdleConnections does nothing here), so shutdown needs its own count.
  const h1InFlight = new Map<Socket, number>();
  let closing = false;

  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  h1.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    h1InFlight.set(socket, (h1InFlight.get(socket) ?? 0) + 1);
    if (closing && !res.headersSent) res.setHeader("connection", "close");
    res.once("close", () => {
      const left = (h1InFlight.get(socket) ?? 1) - 1;
      h1InFlight.set(socket, left);
      if (closing && left === 0) socket.end();
    });
  });

  const front = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      h1InFlight.delete(socket);
    });
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
      // The HTTP/2 session takes the bytes already read from the socket's buffer and then reads
      // the native handle itself: resuming the JS stream here would hand those bytes to no one.
      if (mayBeHttp2) h2.emit("connection", socket);
      else {
        h1InFlight.set(socket, 0);
        h1.emit("connection", socket);
        socket.resume();
      }
    };
    socket.on("data", onData);
  });

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
    async close(graceMs = 5_000) {
      closing = true;
      const closed = new Promise<void>((resolve) => front.close(() => resolve()));
      for (const session of sessions) session.close();
      // Idle keep-alive connections close now; busy ones right after their last response.
      for (const [socket, inFlight] of h1InFlight) if (inFlight === 0) socket.end();
      // A connection that never sent a byte has no protocol yet and would otherwise wait out the grace.
      for (const socket of sockets) if (!h1InFlight.has(socket) && socket.bytesRead === 0) socket.destroy();
      const deadline = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      deadline.unref();
      await closed;
      clearTimeout(deadline);
    },
  };
}

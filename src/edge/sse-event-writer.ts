import type { EventEmitter } from "node:events";
import { ServerResponse } from "node:http";
import type { NodeResponse } from "../transport/http-exchange.js";

/** One event's bytes, made once for every stream: framed as an HTTP/1.1 chunk, and bare within it. */
export interface SseEventBytes {
  readonly chunk: Buffer;
  readonly event: Buffer;
}

export function sseEventBytes(text: string): SseEventBytes {
  const length = Buffer.byteLength(text);
  const head = `${length.toString(16)}\r\n`;
  const chunk = Buffer.allocUnsafe(head.length + length + 2);
  chunk.write(head, 0, "latin1");
  chunk.write(text, head.length, "utf8");
  chunk.write("\r\n", head.length + length, "latin1");
  return Object.freeze({ chunk, event: chunk.subarray(head.length, head.length + length) });
}

export interface SseEventWriter {
  /** Writes the event; false when the client's buffers are full, and `drains` emits "drain" once they empty. */
  write(bytes: SseEventBytes): boolean;
  /** Runs `writes`, sending what they write together: one system call for several events. */
  together<T>(writes: () => T): T;
  readonly drains: EventEmitter;
}

/**
 * How a stream's events reach its client, chosen once its headers are out. A chunked HTTP/1.1
 * response on its socket is written the event's chunk straight to the socket: through the response,
 * every write is framed anew in three pieces and corks the socket until the next tick, a good part
 * of what a write to hundreds of streams costs besides the system call. HTTP/2, HTTP/1.0 and a
 * pipelined response still waiting for its socket are written through the response.
 */
export function sseEventWriter(res: NodeResponse): SseEventWriter {
  const socket = res instanceof ServerResponse && res.chunkedEncoding && res.headersSent ? res.socket : null;
  if (socket !== null) {
    return {
      write: (bytes) => socket.write(bytes.chunk),
      together(writes) {
        socket.cork();
        try {
          return writes();
        } finally {
          socket.uncork();
        }
      },
      drains: socket,
    };
  }
  const response = res as { write(chunk: Buffer): boolean } & EventEmitter;
  // A response's writes in one tick already go out together.
  return { write: (bytes) => response.write(bytes.event), together: (writes) => writes(), drains: response };
}

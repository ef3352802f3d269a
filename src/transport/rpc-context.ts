import type { ConnectError } from "@connectrpc/connect";
import type { MessageCodec } from "./message-codec.js";
import type { UnaryInvoker } from "./unary-invoker.js";

/** Turns what a request failed with (before or around its call) into the error its client reads. */
export type ErrorMapper = (error: unknown) => ConnectError;

/** What every protocol's server needs besides the exchange: how to call, decode, limit and fail. */
export interface RpcContext {
  readonly invoke: UnaryInvoker;
  readonly codec: MessageCodec;
  /** Largest request body (after decompression) accepted. */
  readonly maxBodyBytes: number;
  /** Errors the transport does not know itself (the service's own, and unexpected ones, logged). */
  readonly mapError: ErrorMapper;
}

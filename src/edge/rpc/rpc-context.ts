import type { ErrorLogger } from "../error-mapping.js";
import type { ReadAnswers } from "../read-answers.js";
import type { UnaryInvoker } from "../unary-invoker.js";

/** What every protocol's server needs besides the exchange: how to call, limits, logging. */
export interface RpcContext {
  readonly invoke: UnaryInvoker;
  /** Answers kept for reads seen before; absent, every request is decoded and run. */
  readonly answers?: ReadAnswers;
  /** Largest request body (after decompression) accepted. */
  readonly maxBodyBytes: number;
  /** Unexpected errors: logged, answered as internal. */
  readonly log: ErrorLogger;
}

import { create, type DescMethodUnary, type DescService, type Message } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextKey,
  createContextValues,
  type ContextValues,
  type HandlerContext,
  type Interceptor,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { callObservationKey } from "./call-observation.js";
import type { HttpExchange } from "./http-exchange.js";
import { deadlineExceeded } from "./timeouts.js";
import type { UnaryMethod } from "./unary-method.js";

/** How one call arrived. */
export interface UnaryCall {
  readonly exchange: HttpExchange;
  /** "connect", "grpc", "grpc-web" or "rest": what HandlerContext.protocolName says. */
  readonly protocolName: string;
  /** The caller's deadline on performance.now()'s clock, when its protocol sent one (see timeouts.ts). */
  readonly deadline?: number;
}

/** What a call produced: its message or its error, and the headers and trailers it set. */
export type UnaryOutcome =
  | { readonly ok: true; readonly message: Message; readonly header?: Headers; readonly trailer?: Headers }
  | { readonly ok: false; readonly error: ConnectError; readonly header?: Headers; readonly trailer?: Headers };

export interface UnaryInvokerOptions {
  /** Connect interceptors, outermost first, as the Connect router takes them. */
  readonly interceptors: readonly Interceptor[];
  /** Aborts the signal of every call that reads it when the server shuts down. */
  readonly shutdownSignal?: AbortSignal;
  /** Values for each call's context (the client address, for rate limits). */
  readonly contextValues?: (exchange: HttpExchange) => ContextValues;
  /** Errors that are neither domain nor Connect errors: logged by the caller, answered as internal. */
  readonly onUnexpectedError?: (error: unknown) => void;
}

export type UnaryInvoker = (method: UnaryMethod, input: Message, call: UnaryCall) => Promise<UnaryOutcome>;

/**
 * Runs unary calls for every protocol: Connect's interceptors around the implementation, with a
 * handler context built for the call, the caller's deadline, and cancellation when the client goes
 * away. This replaces Connect's own unary path, whose per-call cost (an async-iterable pipeline,
 * linked abort controllers and a DOMException for every call) was most of a call's CPU: here what
 * most calls never read (the request headers as a Headers object, the abort signal) is made only
 * when read.
 */
export function createUnaryInvoker(options: UnaryInvokerOptions): UnaryInvoker {
  const interceptors = [...options.interceptors].reverse();
  // Each method's interceptor chain is built once: the call it serves travels with the request,
  // in its context values (one object per call, which interceptors pass on unchanged).
  const chains = new Map<UnaryMethod, (request: UnaryRequest) => Promise<UnaryResponse>>();

  function chainOf(target: UnaryMethod) {
    let chain = chains.get(target);
    if (chain === undefined) {
      const implementation = (request: UnaryRequest): Promise<UnaryResponse> => {
        const context = request.contextValues.get(callContextKey) as CallContext;
        return answer(target, context, request).then((message) => context.response(message));
      };
      chain = implementation;
      for (const interceptor of interceptors) chain = interceptor(chain as never) as typeof implementation;
      chains.set(target, chain);
    }
    return chain;
  }

  return (target, input, call) => {
    const context = new CallContext(target, call, options);
    const work = chainOf(target)(requestOf(context, input)).then(
      (response): UnaryOutcome => ({ ok: true, message: response.message, ...context.headersSet() }),
      (error: unknown): UnaryOutcome => ({ ok: false, error: asConnectError(error, options), ...context.headersSet() }),
    );
    return settleFirst(work, context, call);
  };
}

/**
 * The call's context, in its own context values. Not a WeakMap from the values to the context: V8's
 * young-generation collector holds a weak map's values strongly, and the context holds its key, so
 * every call's objects outlived two collections and were promoted to the old generation, to be
 * freed only by full collections (a fifth of what each call allocated; a tenth of the CPU).
 */
const callContextKey = createContextKey<CallContext | undefined>(undefined, { description: "unary call context" });

/** The implementation's answer, as a message of the method's output. */
async function answer(target: UnaryMethod, context: CallContext, request: UnaryRequest): Promise<Message> {
  return create(target.method.output, (await target.impl(request.message as never, context)) as never);
}

function asConnectError(error: unknown, options: UnaryInvokerOptions): ConnectError {
  if (error instanceof ConnectError) return error;
  options.onUnexpectedError?.(error);
  return new ConnectError("internal error", Code.Internal);
}

/**
 * The call's outcome, or an error as soon as its deadline passes or its client leaves: the
 * implementation is told through its signal and may go on (a publish already sent to the database
 * completes), but nobody waits for it.
 */
function settleFirst(work: Promise<UnaryOutcome>, context: CallContext, call: UnaryCall): Promise<UnaryOutcome> {
  const { deadline } = call;
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const stop = (error: ConnectError) => {
      clearTimeout(timer);
      context.cancel(error);
      resolve({ ok: false, error, ...context.headersSet() });
    };
    if (deadline !== undefined) {
      const remaining = deadline - performance.now();
      if (remaining <= 0) return stop(deadlineExceeded());
      timer = setTimeout(() => stop(deadlineExceeded()), remaining);
    }
    call.exchange.onClientGone(() => stop(new ConnectError("the client closed the call", Code.Canceled)));
    void work.then((outcome) => {
      clearTimeout(timer);
      context.finish();
      resolve(outcome);
    });
  });
}

function requestOf(context: CallContext, message: Message): UnaryRequest {
  return new ImplementationRequest(context, message);
}

/**
 * The UnaryRequest interceptors see; its costly parts (URL, signal, headers) are the context's,
 * made when first read. A class: an object literal with getters is built slowly on every call.
 * Interceptors pass it on as it is (ours do); one that spread it into a new object would drop the
 * getters, which live on the prototype.
 */
class ImplementationRequest implements UnaryRequest {
  readonly stream = false as const;
  readonly service: DescService;
  readonly method: DescMethodUnary;
  readonly requestMethod: string;
  readonly contextValues: ContextValues;

  constructor(
    private readonly context: CallContext,
    readonly message: Message,
  ) {
    this.service = context.service;
    this.method = context.method;
    this.requestMethod = context.requestMethod;
    this.contextValues = context.values;
  }

  get url(): string {
    return this.context.url;
  }

  get signal(): AbortSignal {
    return this.context.signal;
  }

  get header(): Headers {
    return this.context.requestHeader;
  }
}

/**
 * A HandlerContext whose costly parts are made on first use. Implementations and interceptors see
 * the same object, so a header an interceptor sets is the header the answer carries.
 */
class CallContext implements HandlerContext {
  readonly service: DescService;
  readonly method: DescMethodUnary;
  readonly protocolName: string;
  readonly values: ContextValues;
  readonly timeoutMs: () => number | undefined;
  #exchange: HttpExchange;
  #shutdown: AbortSignal | undefined;
  #requestHeader: Headers | undefined;
  #responseHeader: Headers | undefined;
  #responseTrailer: Headers | undefined;
  #abort: AbortController | undefined;
  #cancelled: ConnectError | undefined;
  #onShutdown: (() => void) | undefined;

  constructor(target: UnaryMethod, call: UnaryCall, options: UnaryInvokerOptions) {
    this.service = target.service;
    this.method = target.method;
    this.protocolName = call.protocolName;
    this.#exchange = call.exchange;
    this.#shutdown = options.shutdownSignal;
    this.values = options.contextValues?.(call.exchange) ?? createContextValues();
    // Handlers name the authenticated caller here, for the access log.
    this.values.set(callObservationKey, call.exchange.observation);
    this.values.set(callContextKey, this);
    const { deadline } = call;
    this.timeoutMs = deadline === undefined ? () => undefined : () => deadline - performance.now();
  }

  get requestMethod(): string {
    return this.#exchange.method;
  }

  get url(): string {
    const { path, query } = this.#exchange;
    const host = this.#exchange.header(":authority") ?? this.#exchange.header("host") ?? "localhost";
    return `http://${host}${path}${query === "" ? "" : `?${query}`}`;
  }

  get requestHeader(): Headers {
    return (this.#requestHeader ??= requestHeaders(this.#exchange));
  }

  get responseHeader(): Headers {
    return (this.#responseHeader ??= new Headers());
  }

  get responseTrailer(): Headers {
    return (this.#responseTrailer ??= new Headers());
  }

  get signal(): AbortSignal {
    if (this.#abort === undefined) {
      const controller = new AbortController();
      this.#abort = controller;
      if (this.#cancelled !== undefined) controller.abort(this.#cancelled);
      else if (this.#shutdown?.aborted) controller.abort(this.#shutdown.reason);
      else if (this.#shutdown !== undefined) {
        const shutdown = this.#shutdown;
        this.#onShutdown = () => controller.abort(new ConnectError("the server is shutting down", Code.Unavailable));
        shutdown.addEventListener("abort", this.#onShutdown, { once: true });
      }
    }
    return this.#abort.signal;
  }

  /** The implementation's response: the message, with the headers and trailers as set by then or later. */
  response(message: Message): UnaryResponse {
    return new ImplementationResponse(this, message);
  }

  /** The headers and trailers set during the call, if any were. */
  headersSet(): { header?: Headers; trailer?: Headers } {
    return { header: this.#responseHeader, trailer: this.#responseTrailer };
  }

  cancel(reason: ConnectError): void {
    this.#cancelled ??= reason;
    this.#abort?.abort(reason);
    this.finish();
  }

  finish(): void {
    if (this.#onShutdown !== undefined) this.#shutdown?.removeEventListener("abort", this.#onShutdown);
    this.#onShutdown = undefined;
  }
}

/** A UnaryResponse whose headers and trailers are the call's, made when first read. */
class ImplementationResponse implements UnaryResponse {
  readonly stream = false as const;
  readonly service: DescService;
  readonly method: DescMethodUnary;

  constructor(
    private readonly context: CallContext,
    readonly message: Message,
  ) {
    this.service = context.service;
    this.method = context.method;
  }

  get header(): Headers {
    return this.context.responseHeader;
  }

  get trailer(): Headers {
    return this.context.responseTrailer;
  }
}

/** Request headers as a Headers object, without HTTP/2 pseudo-headers (":path"). */
function requestHeaders(exchange: HttpExchange): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(exchange.headers)) {
    if (name.startsWith(":") || value === undefined) continue;
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else headers.set(name, value);
  }
  return headers;
}

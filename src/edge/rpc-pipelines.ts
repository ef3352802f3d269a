import type { Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { RpcContext } from "../transport/rpc-context.js";
import { createUnaryInvoker, type UnaryInvoker } from "../transport/unary-invoker.js";
import type { UnaryMethod } from "../transport/unary-method.js";
import { contextValuesFor, type ClientAddressResolver } from "./client-address.js";
import { streamDecodeErrorInterceptor, toConnectError, type ErrorLogger } from "./error-mapping.js";
import { endAdapterExchange, endExchangeKey } from "./feed-stream-guard.js";
import { createAdapterOutcomeInterceptor, withAdapterObservation } from "./observability.js";
import { reflectionServiceDescriptors, registerReflection } from "./reflection-service.js";
import { createRestTranscoder } from "./rest-transcoder.js";
import { KEPT_READS } from "./method-policies.js";
import { createRegistryMessageCodec } from "./rpc/message-codec.js";
import { JSON_WRITE } from "./rpc/reused-encodings.js";
import { unaryMethodsByPath, type ServedService } from "./served-services.js";

/**
 * What every call runs with, whichever pipeline serves it: unary calls on every protocol, REST
 * included, run on the fast path (transport/unary-invoker.ts); streaming calls (WatchChanges,
 * health Watch, reflection) on Connect's node adapter. Both are built here from this one value,
 * so an interceptor, a limit or an observation given to one cannot be missing from the other.
 */
export interface RpcOptions {
  /** Every service served, with its implementation; reflection over them is added here. */
  readonly services: readonly ServedService[];
  /** Around every call on both pipelines, outermost first (rate limits, error mapping). */
  readonly interceptors: readonly Interceptor[];
  /** Inside those, around the adapter's calls only: what only a long-lived stream needs. */
  readonly streamInterceptors: readonly Interceptor[];
  /** Largest request body, after decompression. */
  readonly maxBodyBytes: number;
  /** Aborts the signal of every call in flight when the server shuts down. */
  readonly shutdownSignal: AbortSignal;
  /** Each call's client address, in its context values, for the per-address limits and stream caps. */
  readonly resolveClientAddress: ClientAddressResolver;
  /**
   * Whether unary calls read the address (some limit is keyed by it): resolving it costs every
   * call, so a server without such limits skips it. Every stream reads it (the feed's caps).
   */
  readonly unaryReadsAddress: boolean;
  /** Errors that are no domain or Connect error: logged, and answered as internal. */
  readonly log: ErrorLogger;
}

export interface RpcPipelines {
  /** The fast path's context for the gRPC, gRPC-Web and Connect unary servers. */
  readonly rpc: RpcContext;
  /** The unary methods the fast path serves, by RPC path. */
  readonly unaryMethods: ReadonlyMap<string, UnaryMethod>;
  /** Connect's node adapter, for streaming calls. */
  readonly adapter: ReturnType<typeof connectNodeAdapter>;
  /** Every RPC path the adapter knows: those the fast path does not serve go to it. */
  readonly adapterPaths: ReadonlySet<string>;
  readonly rest: ReturnType<typeof createRestTranscoder>;
  readonly invoke: UnaryInvoker;
}

export function createRpcPipelines(options: RpcOptions): RpcPipelines {
  const { services, interceptors, maxBodyBytes, shutdownSignal, log } = options;
  const addressValues = contextValuesFor(options.resolveClientAddress);
  const invoke = createUnaryInvoker({
    interceptors,
    shutdownSignal,
    contextValues: options.unaryReadsAddress ? addressValues : undefined,
    onUnexpectedError: log,
  });
  const described = services.map(({ service }) => service);
  const codec = createRegistryMessageCodec(KEPT_READS.map(({ method }) => method.input));
  const adapter = connectNodeAdapter({
    routes: (router) => {
      for (const { service, impl } of services) router.service(service, impl as never);
      registerReflection(router, described);
    },
    // Outermost, so it records the outcome every other interceptor produced.
    interceptors: [createAdapterOutcomeInterceptor(), ...interceptors, ...options.streamInterceptors, streamDecodeErrorInterceptor],
    jsonOptions: JSON_WRITE,
    readMaxBytes: maxBodyBytes,
    shutdownSignal,
    contextValues: (req) => {
      const values = addressValues({ headers: req.headers, remoteAddress: req.socket?.remoteAddress });
      values.set(endExchangeKey, () => endAdapterExchange(req));
      return withAdapterObservation(values, req);
    },
  });
  return {
    rpc: { invoke, codec, maxBodyBytes, mapError: (error) => toConnectError(error, log) },
    unaryMethods: unaryMethodsByPath(services),
    adapter,
    adapterPaths: new Set(
      [...described, ...reflectionServiceDescriptors].flatMap((service) => service.methods.map((m) => `/${service.typeName}/${m.name}`)),
    ),
    rest: createRestTranscoder({ services, invoke, maxBodyBytes, log }),
    invoke,
  };
}

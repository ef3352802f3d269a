import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { createClientOverTransport, type RegistryClient, type RegistryClientBaseOptions } from "./registry-client.js";
import { createWebTransport, type WebTransportKind } from "./web-transport.js";

/**
 * The SDK's Node entry: everything the browser entry (index.ts) offers, and a client that can
 * also speak plain gRPC over HTTP/2.
 */
export * from "./index.js";

/** The protocols a Node client speaks: the fetch-based ones, and gRPC over HTTP/2 (cleartext for http:). */
export type NodeTransportKind = WebTransportKind | "grpc";

/** Options of a Node client. */
export interface NodeRegistryClientOptions extends RegistryClientBaseOptions {
  /** "connect" (JSON) by default. */
  readonly transport?: NodeTransportKind;
  /** The fetch the fetch-based transports use; not used by "grpc". */
  readonly fetch?: typeof globalThis.fetch;
}

/**
 * A client of the registry at `options.baseUrl`. With `transport: "grpc"` it holds an HTTP/2
 * session, which `close()` ends.
 */
export function createRegistryClient(options: NodeRegistryClientOptions): RegistryClient {
  if (options.transport !== "grpc") {
    const transport = createWebTransport(options.transport ?? "connect", options);
    return createClientOverTransport(transport, options);
  }
  const sessionManager = new Http2SessionManager(options.baseUrl);
  const transport = createGrpcTransport({ baseUrl: options.baseUrl, sessionManager });
  return createClientOverTransport(transport, options, () => sessionManager.abort());
}

import type { Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";

/**
 * The protocols a fetch-based client speaks, in browsers and Node alike: Connect with JSON
 * (readable in a network panel) or protobuf, and gRPC-Web. Plain gRPC needs HTTP/2 trailers,
 * which fetch cannot read; it is offered by the Node entry (`createRegistryClient` in node.ts).
 */
export type WebTransportKind = "connect" | "connect-binary" | "grpc-web";

export const WEB_TRANSPORT_KINDS: readonly WebTransportKind[] = ["connect", "connect-binary", "grpc-web"];

/** Options of a fetch-based transport. */
export interface WebTransportOptions {
  readonly baseUrl: string;
  /** The fetch to use; the global one by default (pass one to add a proxy agent, or to observe calls). */
  readonly fetch?: typeof globalThis.fetch;
}

/** A fetch-based transport of `kind` to the registry at `baseUrl`. */
export function createWebTransport(kind: WebTransportKind, options: WebTransportOptions): Transport {
  const common = { baseUrl: options.baseUrl, fetch: options.fetch };
  switch (kind) {
    case "connect":
      return createConnectTransport({ ...common, useBinaryFormat: false });
    case "connect-binary":
      return createConnectTransport({ ...common, useBinaryFormat: true });
    case "grpc-web":
      return createGrpcWebTransport({ ...common, useBinaryFormat: true });
    default:
      throw new TypeError(
        `unknown transport ${JSON.stringify(kind)}: use one of ${WEB_TRANSPORT_KINDS.join(", ")}` +
          ' ("grpc" is offered by the Node entry, which can speak HTTP/2)',
      );
  }
}

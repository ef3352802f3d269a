import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import { createContextKey, createContextValues, type ContextValues } from "@connectrpc/connect";
import proxyaddr from "proxy-addr";
import { ConfigError } from "../config.js";

/** The address of the client a call is for: the peer, or who a trusted proxy says it forwards. */
export const clientAddressKey = createContextKey<string>("", { description: "client address" });

export type ClientAddressResolver = (req: IncomingMessage | Http2ServerRequest) => string;


/**
 * X-Forwarded-For is believed only hop by hop from the right, and only while each hop is a proxy
 * in `trustProxy` (CIDRs, or proxy-addr's names loopback, linklocal, uniquelocal): anyone else can
 * write whatever they like into the header, so an untrusted peer is the client itself.
 */
export function createClientAddressResolver(trustProxy: readonly string[]): ClientAddressResolver {
  let trust: (address: string, hop: number) => boolean;
  try {
    trust = trustProxy.length === 0 ? () => false : proxyaddr.compile([...trustProxy]);
  } catch (error) {
    throw new ConfigError(`TRUST_PROXY: ${(error as Error).message}`);
  }
  return (req) => {
    const forwardedFor = req.headers["x-forwarded-for"];
    // Only what proxy-addr reads: the socket's peer and the header, joined if it came repeated.
    const view = {
      headers: { "x-forwarded-for": Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor },
      socket: { remoteAddress: req.socket?.remoteAddress },
    };
    return normalise(proxyaddr(view as unknown as IncomingMessage, trust) ?? "");
  };
}

/** IPv4 clients of a dual-stack socket appear as ::ffff:a.b.c.d; one client, one key. */
function normalise(address: string): string {
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice("::ffff:".length) : address;
}

/** Context values for one call, with the client's address resolved. */
export function contextValuesFor(resolve: ClientAddressResolver) {
  return (req: IncomingMessage | Http2ServerRequest): ContextValues => {
    const values = createContextValues();
    values.set(clientAddressKey, resolve(req));
    return values;
  };
}

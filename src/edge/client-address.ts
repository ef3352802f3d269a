import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import { createContextKey, createContextValues, type ContextValues } from "@connectrpc/connect";
import proxyaddr from "proxy-addr";
import { ConfigError } from "../config.js";

/** The address of the client a call is for: the peer, or who a trusted proxy says it forwards. */
export const clientAddressKey = createContextKey<string>("", { description: "client address" });

/** What a client address is read from: the request's headers and the socket's peer. */
export interface ClientConnection {
  readonly headers: IncomingHttpHeaders;
  readonly remoteAddress: string | undefined;
}

export type ClientAddressResolver = (connection: ClientConnection) => string;


/**
 * Whether an address is one of the proxies in TRUST_PROXY (CIDRs, or proxy-addr's names loopback,
 * linklocal, uniquelocal). The one reading of that setting: the client address, the per-address
 * connection cap and the request id all ask it. A malformed list is a ConfigError at start.
 */
export function createTrustedProxyTest(trustProxy: readonly string[]): (address: string, hop?: number) => boolean {
  if (trustProxy.length === 0) return () => false;
  try {
    const trust = proxyaddr.compile([...trustProxy]);
    return (address, hop = 0) => trust(address, hop);
  } catch (error) {
    throw new ConfigError(`TRUST_PROXY: ${(error as Error).message}`);
  }
}

/**
 * X-Forwarded-For is believed only hop by hop from the right, and only while each hop is a trusted
 * proxy: anyone else can write whatever they like into the header, so an untrusted peer is the
 * client itself.
 */
export function createClientAddressResolver(trustProxy: readonly string[]): ClientAddressResolver {
  // Trusting no proxy, the peer is the client whatever the header says: nothing to parse.
  if (trustProxy.length === 0) return (connection) => normalise(connection.remoteAddress ?? "");
  const isTrusted = createTrustedProxyTest(trustProxy);
  const trust = (address: string, hop: number) => isTrusted(address, hop);
  return (connection) => {
    const forwardedFor = connection.headers["x-forwarded-for"];
    // Only what proxy-addr reads: the socket's peer and the header, joined if it came repeated.
    const view = {
      headers: { "x-forwarded-for": Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor },
      socket: { remoteAddress: connection.remoteAddress },
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
  return (connection: ClientConnection): ContextValues => {
    const values = createContextValues();
    values.set(clientAddressKey, resolve(connection));
    return values;
  };
}

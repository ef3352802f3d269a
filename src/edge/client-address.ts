import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import { isIPv6 } from "node:net";
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

/**
 * The key every per-address limit counts a client under (the connection cap, and the reads,
 * writes, tokens and admin buckets): an IPv4 address, or the /64 network of an IPv6 one, since a
 * single IPv6 host is usually given a whole /64 and could otherwise take a limit's worth per
 * address. An IPv4-mapped IPv6 address (::ffff:a.b.c.d, or its hex form) is its IPv4 address.
 * Anything that is not an IP address is its own key.
 */
export function addressKey(address: string): string {
  const groups = ipv6Groups(address.split("%", 1)[0]!);
  if (groups === undefined) return address;
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join(".");
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(":")}::/64`;
}

/** The eight 16-bit groups of an IPv6 address (zone already removed), or undefined for anything else. */
function ipv6Groups(address: string): number[] | undefined {
  if (!isIPv6(address)) return undefined;
  const parse = (part: string) =>
    part === ""
      ? []
      : part.split(":").flatMap((group) => {
          if (!group.includes(".")) return [Number.parseInt(group, 16)];
          const [a = 0, b = 0, c = 0, d = 0] = group.split(".").map(Number);
          return [(a << 8) | b, (c << 8) | d];
        });
  const [head = "", tail] = address.split("::");
  const left = parse(head);
  if (tail === undefined) return left;
  const right = parse(tail);
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/** Context values for one call, with the client's address resolved. */
export function contextValuesFor(resolve: ClientAddressResolver) {
  return (connection: ClientConnection): ContextValues => {
    const values = createContextValues();
    values.set(clientAddressKey, resolve(connection));
    return values;
  };
}

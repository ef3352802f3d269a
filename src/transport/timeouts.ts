/**
 * Deadlines as the protocols send them. gRPC (and gRPC-Web): `grpc-timeout`, at most 8 digits and
 * a unit (H M S m u n). Connect: `connect-timeout-ms`, at most 10 digits of milliseconds.
 * Returns milliseconds, undefined when no deadline was sent, or an error text for a malformed one.
 */
const GRPC_UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 0.001, n: 0.000_001 };

export function parseGrpcTimeout(value: string | undefined): number | undefined | { error: string } {
  if (value === undefined) return undefined;
  const match = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (match === null) return { error: `grpc-timeout: "${value}" is not 1-8 digits and a unit (H, M, S, m, u, n)` };
  return Number(match[1]) * (GRPC_UNIT_MS[match[2] as string] as number);
}

export function parseConnectTimeout(value: string | undefined): number | undefined | { error: string } {
  if (value === undefined) return undefined;
  if (!/^\d{1,10}$/.test(value)) return { error: `connect-timeout-ms: "${value}" is not 1-10 digits` };
  return Number(value);
}

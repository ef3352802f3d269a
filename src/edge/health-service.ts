import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { setTimeout as sleep } from "node:timers/promises";
import {
  type Health,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/grpc/health/v1/health_pb.js";

export const DEFAULT_WATCH_INTERVAL_MS = 5_000;

export interface HealthServiceOptions {
  /**
   * Full names of the served services (e.g. "registry.v1.RegistryService") a client may ask
   * about besides "", the whole server. All share the one check: they live or die together.
   */
  readonly services?: Iterable<string>;
  /** How often Watch re-runs the check; tests shorten it. */
  readonly watchIntervalMs?: number;
}

/**
 * The standard grpc.health.v1.Health service, for load balancers, Kubernetes gRPC probes and
 * grpc-health-probe. `check` reports whether the server can do useful work (e.g. reach its
 * database).
 */
export function createHealthService(check: () => Promise<boolean>, options: HealthServiceOptions = {}): ServiceImpl<typeof Health> {
  const known = new Set(["", ...(options.services ?? [])]);
  const interval = options.watchIntervalMs ?? DEFAULT_WATCH_INTERVAL_MS;

  async function currentStatus(): Promise<ServingStatus> {
    try {
      return (await check()) ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
    } catch {
      // A check that cannot even run is an unhealthy dependency, not a reason to fail the probe
      // call itself: probes must get an answer they can act on.
      return ServingStatus.NOT_SERVING;
    }
  }

  return {
    async check(request) {
      if (!known.has(request.service)) {
        // The health spec asks for NOT_FOUND here so probes can tell "unknown" from "down".
        throw new ConnectError(`unknown service: ${request.service}`, Code.NotFound);
      }
      return create(HealthCheckResponseSchema, { status: await currentStatus() });
    },

    async *watch(request, context) {
      const { signal } = context;
      if (!known.has(request.service)) {
        // Unlike Check, the spec keeps a Watch on an unknown service open: the service may be
        // registered later. Ours is a fixed list, so it stays SERVICE_UNKNOWN until cancelled.
        yield create(HealthCheckResponseSchema, { status: ServingStatus.SERVICE_UNKNOWN });
        await abortion(signal);
        return;
      }
      let last: ServingStatus | undefined;
      while (!signal.aborted) {
        const status = await currentStatus();
        // Watchers act on transitions, so repeating an unchanged status would only be noise.
        if (status !== last) {
          last = status;
          yield create(HealthCheckResponseSchema, { status });
        }
        try {
          await sleep(interval, undefined, { signal });
        } catch {
          return; // the client went away
        }
      }
    },
  };
}

function abortion(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

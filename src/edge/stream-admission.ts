import { Code, ConnectError } from "@connectrpc/connect";
import { addressKey } from "./client-address.js";

/** How many change-feed streams may be open at once: per client address (an IPv6 /64) and in all; 0 is no cap. */
export interface StreamCaps {
  readonly perAddress: number;
  readonly total: number;
}

/**
 * Counts open change-feed streams (SSE and WatchChanges alike). Every stream costs a place in
 * the log's waiters and, while it catches up, a batch; without a cap one address could open as
 * many as its connections allow.
 */
export interface StreamAdmission {
  /**
   * Takes a place for a stream of `address`, returning what gives it back (once, however often
   * called); over a cap it throws resource_exhausted, which is HTTP 429.
   */
  open(address: string): () => void;
  /** Streams open now. */
  readonly size: number;
}

export function createStreamAdmission(caps: StreamCaps): StreamAdmission {
  const byAddress = new Map<string, number>();
  let size = 0;
  return {
    open(address) {
      const key = addressKey(address);
      const mine = byAddress.get(key) ?? 0;
      if (caps.total > 0 && size >= caps.total) {
        throw new ConnectError(
          `too many change streams open on this server (at most ${caps.total}); retry later, or read pages of GET /v1/changes`,
          Code.ResourceExhausted,
        );
      }
      if (caps.perAddress > 0 && mine >= caps.perAddress) {
        throw new ConnectError(
          `too many change streams open from this client address (at most ${caps.perAddress}); close one first`,
          Code.ResourceExhausted,
        );
      }
      byAddress.set(key, mine + 1);
      size += 1;
      let open = true;
      return () => {
        if (!open) return;
        open = false;
        size -= 1;
        const left = byAddress.get(key)! - 1;
        if (left === 0) byAddress.delete(key);
        else byAddress.set(key, left);
      };
    },
    get size() {
      return size;
    },
  };
}

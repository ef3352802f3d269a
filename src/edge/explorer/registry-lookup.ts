import type { DiscoveryService } from "../../discovery/discovery-service.js";
import { VERSION_STATUSES } from "../../domain/version-state.js";
import type { EntryService } from "../../entries/entry-service.js";
import { InvalidArgumentError, NotFoundError } from "../../errors.js";
import type { ExplorerLookup } from "./explorer-pages.js";

/**
 * The explorer's lookups through the registry's own services: what resolve finds, and what
 * discovery lists for a publisher in any state (a condition on status reaches every version).
 * A DID that is no DID is as unknown as one nobody published.
 */
export function createRegistryLookup(services: { readonly entries: EntryService; readonly discovery: DiscoveryService }): ExplorerLookup {
  return {
    async entryExists(did) {
      return services.entries.resolve(did).then(
        () => true,
        (error: unknown) => (isUnknown(error) ? false : Promise.reject(error)),
      );
    },
    async publisherExists(did) {
      const request = {
        entryType: "",
        conditions: [
          { field: "publisherDid", op: "=" as const, value: did },
          { field: "status", op: "IN" as const, value: [...VERSION_STATUSES] },
        ],
        limit: 1,
        cursor: "",
      };
      return services.discovery.discover(request).then(
        (page) => page.entries.length > 0,
        (error: unknown) => (isUnknown(error) ? false : Promise.reject(error)),
      );
    },
  };
}

function isUnknown(error: unknown): boolean {
  return error instanceof NotFoundError || error instanceof InvalidArgumentError;
}

import { FailedPreconditionError } from "../errors.js";
import type { EntryRepository } from "./entry-repository.js";

/**
 * The repository of a registry that serves another registry's log (a mirror's database): reads
 * pass through, writes are refused. A local write would take a log index the source fills next,
 * and sign it with a key that is not the source's, so the mirror could not go on.
 */
export function createReadOnlyEntryRepository(repository: EntryRepository, sourceOrigin: string): EntryRepository {
  const refuse = (): never => {
    throw new FailedPreconditionError(`this registry serves a mirror of ${sourceOrigin}: publish, revoke and act there`);
  };
  return { ...repository, createEntry: async () => refuse(), revoke: async () => refuse(), applyAction: async () => refuse() };
}

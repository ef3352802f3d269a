import { DeadlineExceededError, RegistryError, UnavailableError } from "../errors.js";

/** Postgres SQLSTATE of a unique-constraint violation. */
export const UNIQUE_VIOLATION = "23505";
const QUERY_CANCELED = "57014";

export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === UNIQUE_VIOLATION;
}

/**
 * Runs a storage call and turns driver failures into domain errors, so no driver message (which
 * may carry SQL, table names or connection details) reaches a client. The original error is kept
 * as `cause` for the server's own log.
 */
export async function translateDriverErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof RegistryError) throw error;
    const code = (error as { code?: unknown } | null)?.code;
    if (code === QUERY_CANCELED) {
      throw new DeadlineExceededError("the query took too long and was cancelled", { cause: error });
    }
    throw new UnavailableError("the database is unavailable", { cause: error });
  }
}

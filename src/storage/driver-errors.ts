import { DeadlineExceededError, InvalidArgumentError, RegistryError, UnavailableError } from "../errors.js";

/** Postgres SQLSTATE of a unique-constraint violation. */
export const UNIQUE_VIOLATION = "23505";
const QUERY_CANCELED = "57014";

/** SQLSTATE class 22, data exception: the statement ran, and a value in it could not be taken. */
const DATA_EXCEPTION = /^22[0-9A-Z]{3}$/;

/**
 * What each data exception means for a client, in words of its own: no driver text, which may
 * quote SQL, parameters or table names. Codes not listed get the general sentence.
 */
const DATA_EXCEPTION_DESCRIPTIONS: Readonly<Record<string, string>> = {
  // character_not_in_repertoire (NUL in text), untranslatable_character (\u0000 in jsonb)
  "22021": "text in the request contains a character the database cannot store (NUL or an unpaired surrogate)",
  "22P05": "text in the request contains a character the database cannot store (NUL or an unpaired surrogate)",
  // numeric_value_out_of_range
  "22003": "a number in the request is out of range",
  // datetime_field_overflow
  "22008": "a time in the request is out of range",
};
const DATA_EXCEPTION_DEFAULT = "a value in the request cannot be stored";

/**
 * A value the database refused. Domain rules should have refused it first, so reaching this is a
 * missing rule: the driver error stays as `cause` for the server's log.
 */
export class UnstorableValueError extends InvalidArgumentError {
  constructor(description: string, options: { cause: unknown }) {
    // Which field held the value is not known here; "request" is the whole of what was sent.
    super([{ field: "request", description }]);
    this.cause = options.cause;
  }
}

/** A unique violation, of the named constraint when one is given. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  if (sqlStateOf(error) !== UNIQUE_VIOLATION) return false;
  return constraint === undefined || violatedUniqueConstraint(error) === constraint;
}

/**
 * The name of the unique constraint or index a unique violation broke, so each caller can say what
 * it means; undefined for any other error (and for a violation whose driver did not name it).
 */
export function violatedUniqueConstraint(error: unknown): string | undefined {
  if (sqlStateOf(error) !== UNIQUE_VIOLATION) return undefined;
  const constraint = (error as { constraint?: unknown }).constraint;
  return typeof constraint === "string" ? constraint : undefined;
}

/**
 * Runs a storage call and turns driver failures into domain errors, so no driver message (which
 * may carry SQL, table names or connection details) reaches a client. A data exception is about
 * the request's values and is invalid_argument; everything else (connection loss, shutdown,
 * resources) is the database being unavailable. The original error is kept as `cause` for the
 * server's own log.
 */
export async function translateDriverErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw translatedDriverError(error);
  }
}

/** The domain error for a driver failure. */
export function translatedDriverError(error: unknown): Error {
  if (error instanceof RegistryError) return error;
  const code = sqlStateOf(error);
  if (code === QUERY_CANCELED) {
    return new DeadlineExceededError("the query took too long and was cancelled", { cause: error });
  }
  if (code !== undefined && DATA_EXCEPTION.test(code)) {
    return new UnstorableValueError(DATA_EXCEPTION_DESCRIPTIONS[code] ?? DATA_EXCEPTION_DEFAULT, { cause: error });
  }
  return new UnavailableError("the database is unavailable", { cause: error });
}

/** A Postgres error's SQLSTATE; node errors (ECONNREFUSED...) carry other codes, which do not match. */
function sqlStateOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

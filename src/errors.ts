/**
 * Typed domain errors. Capability code throws these; the edge maps each kind to one Connect code
 * (and so one HTTP status) in a single place. Messages are written for API users: they name the
 * offending field and never carry driver or stack details.
 */

/** One rejected request field and why. */
export interface FieldViolation {
  /** Path of the field as the client sent it, e.g. "entry.tags[2]" or "scopes". */
  readonly field: string;
  readonly description: string;
}

export type RegistryErrorKind =
  | "invalid_argument"
  | "unauthenticated"
  | "permission_denied"
  | "not_found"
  | "already_exists"
  | "failed_precondition"
  | "resource_exhausted"
  | "unavailable"
  | "deadline_exceeded";

export abstract class RegistryError extends Error {
  abstract readonly kind: RegistryErrorKind;
}

export class InvalidArgumentError extends RegistryError {
  readonly kind = "invalid_argument";
  constructor(readonly violations: readonly FieldViolation[]) {
    super(violations.map((v) => `${v.field}: ${v.description}`).join("; "));
  }

  static of(field: string, description: string): InvalidArgumentError {
    return new InvalidArgumentError([{ field, description }]);
  }
}

export class UnauthenticatedError extends RegistryError {
  readonly kind = "unauthenticated";
}

export class PermissionDeniedError extends RegistryError {
  readonly kind = "permission_denied";
}

export class NotFoundError extends RegistryError {
  readonly kind = "not_found";
}

export class AlreadyExistsError extends RegistryError {
  readonly kind = "already_exists";
}

/** The registry is not in a state that allows the call (a mirror refusing writes). */
export class FailedPreconditionError extends RegistryError {
  readonly kind = "failed_precondition";
}

export class ResourceExhaustedError extends RegistryError {
  readonly kind = "resource_exhausted";
}

export class UnavailableError extends RegistryError {
  readonly kind = "unavailable";
}

export class DeadlineExceededError extends RegistryError {
  readonly kind = "deadline_exceeded";
}

/** Collects field violations so a request can be rejected with all of them at once. */
export class ViolationList {
  private readonly items: FieldViolation[] = [];

  add(field: string, description: string): void {
    this.items.push({ field, description });
  }

  get isEmpty(): boolean {
    return this.items.length === 0;
  }

  throwIfAny(): void {
    if (this.items.length > 0) throw new InvalidArgumentError(this.items);
  }
}

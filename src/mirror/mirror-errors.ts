/** The mirror must not go on: the source, or this database, is not what it should be. */
export class MirrorRefusedError extends Error {
  override readonly name = "MirrorRefusedError";
}

/** The source could not be read: unreachable, too slow, or it answered with an error. */
export class LogSourceError extends Error {
  override readonly name = "LogSourceError";
}

/** The mirror was asked to stop; what it had proved and written stays, and the next run goes on from there. */
export class MirrorStoppedError extends Error {
  override readonly name = "MirrorStoppedError";
}

import type { ChangePage, LoggedChange } from "./change-log.js";

/**
 * The newest records of the log, held once per process for every stream that has caught up.
 * A commit costs one read however many streams follow the head: the first stream to wake reads
 * past the tail's end and the others wait for that same read. Records never change once logged,
 * so what the tail holds needs no invalidation; it keeps the latest `maxRecords` and `maxBytes`.
 */
export interface LogTail {
  /**
   * The held records after `after`, up to the end of one read (callers loop), or [] when none is
   * held beyond it yet; undefined when `after` is older than what the tail holds, and the caller
   * reads those records from the database itself.
   */
  heldAfter(after: bigint): readonly LoggedChange[] | undefined;
  /** Whether the tail holds a record after `after`: a caller then need not extend it. */
  holdsAfter(after: bigint): boolean;
  /**
   * Reads the records after the tail's end (or after `after`, while it holds none or ends before
   * `after`), one read at a time: a caller arriving while a read runs waits for it rather than
   * starting another.
   */
  extend(after: bigint): Promise<void>;
}

export interface LogTailOptions {
  /** A page of records after `after`, bounded in records and bytes. */
  readonly read: (after: bigint) => Promise<ChangePage>;
  readonly maxRecords: number;
  readonly maxBytes: number;
}

/** One read's records: consecutive indexes from `first`. */
interface Segment {
  readonly first: bigint;
  readonly changes: readonly LoggedChange[];
  readonly bytes: number;
}

export function createLogTail(options: LogTailOptions): LogTail {
  const segments: Segment[] = [];
  let records = 0;
  let bytes = 0;
  let reading: Promise<void> | undefined;

  /** The index after the last held record; undefined while none is held. */
  const end = (): bigint | undefined => {
    const last = segments.at(-1);
    return last === undefined ? undefined : last.first + BigInt(last.changes.length);
  };

  function append(page: ChangePage): void {
    const first = page.changes[0];
    if (first === undefined) return;
    segments.push({ first: first.index, changes: page.changes, bytes: page.bytes });
    records += page.changes.length;
    bytes += page.bytes;
    // The newest read stays whatever it weighs: it is what every caught-up stream needs next.
    while (segments.length > 1 && (records > options.maxRecords || bytes > options.maxBytes)) {
      const oldest = segments.shift()!;
      records -= oldest.changes.length;
      bytes -= oldest.bytes;
    }
  }

  async function readNext(after: bigint): Promise<void> {
    const held = end();
    // A caller beyond what is held (the tail went stale while nobody followed): start anew from
    // it rather than read the records in between, which no caller at the head needs.
    if (held !== undefined && after >= held) drop();
    append(await options.read(held === undefined || after >= held ? after : held - 1n));
  }

  function drop(): void {
    segments.length = 0;
    records = 0;
    bytes = 0;
  }

  return {
    heldAfter(after) {
      const first = segments[0];
      if (first === undefined || after + 1n < first.first) return undefined;
      for (const segment of segments) {
        const offset = after + 1n - segment.first;
        if (offset < BigInt(segment.changes.length)) return segment.changes.slice(Number(offset));
      }
      return [];
    },

    holdsAfter(after) {
      const held = end();
      return held !== undefined && segments[0]!.first <= after + 1n && after + 1n < held;
    },

    extend(after) {
      reading ??= readNext(after).finally(() => {
        reading = undefined;
      });
      return reading;
    },
  };
}

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
  /** The index after its last record; undefined while it holds none (none read yet, or it restarted). */
  readonly end: bigint | undefined;
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
  /** Called once records were added, before any caller of `extend` resumes. */
  readonly onAppend?: () => void;
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
    options.onAppend?.();
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
      const next = after + 1n;
      if (segments.length === 0 || next < segments[0]!.first) return undefined;
      // From the newest: the streams asking are mostly at the head, and the tail may hold a
      // thousand one-record reads.
      for (let i = segments.length - 1; i >= 0; i -= 1) {
        const segment = segments[i]!;
        if (segment.first > next) continue;
        const offset = Number(next - segment.first);
        if (offset >= segment.changes.length) return [];
        return offset === 0 ? segment.changes : segment.changes.slice(offset);
      }
      return [];
    },

    holdsAfter(after) {
      const held = end();
      return held !== undefined && segments[0]!.first <= after + 1n && after + 1n < held;
    },

    get end() {
      return end();
    },

    extend(after) {
      reading ??= readNext(after).finally(() => {
        reading = undefined;
      });
      return reading;
    },
  };
}

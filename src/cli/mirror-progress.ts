import type { LogSource } from "../mirror/log-mirror.js";
import type { MirrorStore } from "../mirror/mirror-store.js";
import type { ProgressLine } from "./progress-line.js";

/**
 * The source and the store of a mirror, passed through unchanged, telling a progress line how far
 * a catch-up has come: the records this database holds against the size of the source's latest
 * checkpoint, after each batch written.
 */
export function reportingMirrorProgress(
  source: LogSource,
  store: MirrorStore,
  progress: ProgressLine,
): { source: LogSource; store: MirrorStore } {
  let held = 0;
  let target: number | undefined;
  let origin = "";
  const show = () => progress.update(`mirrored ${held}${target === undefined ? "" : ` of ${target}`} records of ${origin}`);
  return {
    source: {
      url: source.url,
      logKey: () => source.logKey(),
      async checkpoint() {
        const note = await source.checkpoint();
        // A checkpoint's first lines are its origin and tree size (c2sp.org/tlog-checkpoint); the mirror verifies it.
        const [first = "", size = ""] = note.split("\n");
        origin = first;
        target = /^\d+$/.test(size) ? Number(size) : undefined;
        return note;
      },
      consistencyProof: (fromSize, toSize) => source.consistencyProof(fromSize, toSize),
      records: (from, count, treeSize) => source.records(from, count, treeSize),
    },
    store: {
      async position() {
        const position = await store.position();
        held = position.logSize;
        return position;
      },
      recordsAbout: (baseDids) => store.recordsAbout(baseDids),
      async append(batch) {
        await store.append(batch);
        held += batch.changes.length;
        show();
      },
    },
  };
}

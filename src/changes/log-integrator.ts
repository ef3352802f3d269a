import { formatCheckpoint } from "../transparency/checkpoint.js";
import type { MerkleHasher, Sha256 } from "../transparency/merkle.js";
import { signNote, type NoteSigner } from "../transparency/signed-note.js";
import { appendLeaves } from "../transparency/stored-hashes.js";
import { logRecordBytes } from "./log-record.js";
import type { SignedCheckpoint, TreeHead, TreeStore } from "./transparency-log.js";

export interface LogIntegratorOptions {
  readonly store: TreeStore;
  readonly hasher: MerkleHasher;
  readonly sha256: Sha256;
  /** The log's key; its name is the checkpoint's origin line. */
  readonly signer: NoteSigner;
  /** Records integrated per transaction. */
  readonly batch?: number;
  /** How often the tree is brought up to date even without a hint. */
  readonly intervalMs: number;
  /** How long after a hint (a write of this process) the tree is brought up to date. */
  readonly hintDelayMs?: number;
  readonly onError?: (error: unknown) => void;
}

export interface LogIntegrator {
  /** Brings the tree up to the change log's size now; the checkpoint made, if the tree grew. */
  integrate(): Promise<SignedCheckpoint | undefined>;
  /** The log grew in this process: integrate soon. */
  hint(): void;
  /**
   * Starts nothing new from now on (a shutdown has begun: its event loop is better spent draining
   * requests); a batch under way completes. Another process, or the next start, integrates the rest.
   */
  stop(): void;
  /** Stops, and waits for a batch under way. */
  close(): Promise<void>;
}

/**
 * Grows the tree over the change log, in batches, and signs a checkpoint for each new size: the
 * sequencing step of Trillian and Tessera, except that the log's order is already fixed by the
 * writes (docs/feed.md), so integrating only hashes what is there. Every process runs one; the
 * tree's row lock lets one at a time work and the others skip, so a process that stops leaves the
 * others integrating.
 */
export function createLogIntegrator(options: LogIntegratorOptions): LogIntegrator {
  const { store, hasher, signer } = options;
  const batch = options.batch ?? 1_000;
  let running: Promise<SignedCheckpoint | undefined> | undefined;
  let again = false;
  let hinted: NodeJS.Timeout | undefined;
  let closed = false;

  async function integrateBatch(): Promise<{ checkpoint: SignedCheckpoint; full: boolean } | undefined> {
    const outcome = await store.integrate(async (tree) => {
      const changes = await tree.pendingChanges(batch);
      if (changes.length === 0) return undefined;
      const records = changes.map((change) => ({ index: Number(change.index), bytes: logRecordBytes(change) }));
      const appended = await appendLeaves(
        tree.head.size,
        records.map((record) => hasher.leafHash(record.bytes)),
        tree,
        hasher,
      );
      const checkpoint = await signCheckpoint({ size: appended.size, root: appended.root }, signer, options.sha256);
      const head = { size: checkpoint.size, root: checkpoint.root };
      await tree.write({ storedHashes: appended.storedHashes, records, head, checkpoint });
      return { checkpoint, full: changes.length === batch };
    });
    return outcome ?? undefined;
  }

  async function integrateAll(): Promise<SignedCheckpoint | undefined> {
    let last: SignedCheckpoint | undefined;
    for (;;) {
      const step = await integrateBatch();
      if (step === undefined) return last;
      last = step.checkpoint;
      if (!step.full) return last;
    }
  }

  function integrate(): Promise<SignedCheckpoint | undefined> {
    if (running !== undefined) {
      again = true;
      return running;
    }
    running = integrateAll().finally(() => {
      running = undefined;
      if (again && !closed) {
        again = false;
        void integrate().catch((error: unknown) => options.onError?.(error));
      }
    });
    return running;
  }

  const tick = () => {
    if (!closed) void integrate().catch((error: unknown) => options.onError?.(error));
  };
  const timer = setInterval(tick, options.intervalMs);
  timer.unref();

  function stop(): void {
    closed = true;
    clearInterval(timer);
    clearTimeout(hinted);
  }

  return {
    integrate,
    hint() {
      if (hinted !== undefined || closed) return;
      hinted = setTimeout(() => {
        hinted = undefined;
        tick();
      }, options.hintDelayMs ?? 100);
      hinted.unref();
    },
    stop,
    async close() {
      stop();
      await running?.catch(() => undefined);
    },
  };
}

/** The checkpoint of `head`, signed with the log's key: a C2SP signed note of its tlog-checkpoint body. */
async function signCheckpoint(head: TreeHead, signer: NoteSigner, sha256: Sha256): Promise<SignedCheckpoint> {
  const note = await signNote(
    formatCheckpoint({ origin: signer.name, size: head.size, rootHash: head.root, extensions: [] }),
    signer,
    sha256,
  );
  return { size: head.size, root: head.root, note };
}

/**
 * The signed checkpoint of the tree with no records (RFC 9162 2.1.1: its root is SHA-256 of no
 * bytes), which a log serves before it has integrated anything. It is true of every log whatever
 * it holds later, so it is made once at start and never stored: a checkpoint row of size 0 would
 * be written by every process that found the log empty, and only the first could insert it.
 */
export function signEmptyTreeCheckpoint(signer: NoteSigner, hasher: MerkleHasher, sha256: Sha256): Promise<SignedCheckpoint> {
  return signCheckpoint({ size: 0, root: hasher.emptyRoot() }, signer, sha256);
}

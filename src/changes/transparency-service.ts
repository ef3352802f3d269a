import { parseEntryDid } from "../domain/entry-did.js";
import { InvalidArgumentError, NotFoundError, UnavailableError } from "../errors.js";
import type { MerkleHasher } from "../transparency/merkle.js";
import { consistencyProof, inclusionProof } from "../transparency/proofs.js";
import { readHistoryPage, type HistoryPage } from "./history-pages.js";
import type { SignedCheckpoint, TreeStore } from "./transparency-log.js";

export interface TransparencyServiceOptions {
  readonly store: TreeStore;
  readonly hasher: MerkleHasher;
  /**
   * The signed checkpoint of the empty tree (signEmptyTreeCheckpoint), the latest while the store
   * holds none; absent where nothing is signed (a mirror serves only what it copied).
   */
  readonly emptyTree?: SignedCheckpoint;
}

export interface InclusionAnswer {
  readonly index: number;
  readonly treeSize: number;
  readonly record: Uint8Array;
  readonly proof: readonly Uint8Array[];
}

export interface TransparencyService {
  latestCheckpoint(): Promise<SignedCheckpoint>;
  /** `treeSize` 0: the latest checkpoint's. */
  inclusion(index: number, treeSize: number): Promise<InclusionAnswer>;
  /** `toSize` 0: the latest checkpoint's. */
  consistency(fromSize: number, toSize: number): Promise<{ fromSize: number; toSize: number; proof: readonly Uint8Array[] }>;
  /** The last record about a versioned DID, proved against the latest checkpoint. */
  entryProof(did: string): Promise<InclusionAnswer & { checkpoint: SignedCheckpoint }>;
  /** The checkpoint of `treeSize` exactly (0: the latest), as a history's later pages ask for their first's. */
  checkpointOf(treeSize: number): Promise<SignedCheckpoint>;
  /** A page of the records about `did` (bare or versioned) after index `after`, proved against `checkpoint`. */
  history(did: string, after: number | undefined, checkpoint: SignedCheckpoint): Promise<HistoryPage>;
}

/**
 * Proofs answer only for sizes a checkpoint was signed for or below: a size the tree has reached
 * but not yet signed would prove against a root nobody can check.
 */
export function createTransparencyService(options: TransparencyServiceOptions): TransparencyService {
  const { store, hasher } = options;

  async function latestCheckpoint(): Promise<SignedCheckpoint> {
    const checkpoint = (await store.latestCheckpoint()) ?? options.emptyTree;
    if (checkpoint === undefined)
      throw new UnavailableError("the log has no checkpoint yet: a mirror has one once it has copied its source's");
    return checkpoint;
  }

  async function signedSize(requested: number, field: string): Promise<number> {
    checkCount(requested, field);
    const latest = await latestCheckpoint();
    if (requested === 0) return latest.size;
    if (requested > latest.size) throw InvalidArgumentError.of(field, `must be at most ${latest.size}, the latest checkpoint's size`);
    return requested;
  }

  async function inclusion(index: number, treeSize: number): Promise<InclusionAnswer> {
    checkCount(index, "index");
    const size = await signedSize(treeSize, "treeSize");
    if (index >= size) throw InvalidArgumentError.of("index", `must be below the tree size ${size}`);
    const [record] = await store.records(index, 1);
    return { index, treeSize: size, record: record!, proof: await inclusionProof(index, size, store, hasher) };
  }

  async function checkpointOf(treeSize: number): Promise<SignedCheckpoint> {
    checkCount(treeSize, "treeSize");
    const latest = await latestCheckpoint();
    if (treeSize === 0 || treeSize === latest.size) return latest;
    const checkpoint = await store.checkpointAt(treeSize);
    if (checkpoint === undefined)
      throw InvalidArgumentError.of(
        "treeSize",
        "is not the size of a checkpoint: pass 0 for the latest, or the treeSize of an earlier page",
      );
    return checkpoint;
  }

  return {
    latestCheckpoint,
    inclusion,
    checkpointOf,

    async history(did, after, checkpoint) {
      if (after !== undefined) checkCount(after, "after");
      return readHistoryPage(store, hasher, did, after, checkpoint);
    },

    async consistency(fromSize, toSize) {
      checkCount(fromSize, "fromSize");
      const size = await signedSize(toSize, "toSize");
      if (fromSize > size) throw InvalidArgumentError.of("fromSize", `must be at most toSize (${size})`);
      return { fromSize, toSize: size, proof: await consistencyProof(fromSize, size, store, hasher) };
    },

    async entryProof(did) {
      const parsed = parseEntryDid(did);
      if ("error" in parsed) throw InvalidArgumentError.of("did", parsed.error);
      if (parsed.version === undefined)
        throw InvalidArgumentError.of("did", "must name a version (name@version): a proof is of one version's state");
      const checkpoint = await latestCheckpoint();
      const index = await store.lastIntegratedRecordOf(`${parsed.baseDid}@${parsed.version.version}`, checkpoint.size);
      if (index === undefined)
        throw new NotFoundError(`no record of ${did} in the log's latest checkpoint (a change is integrated within seconds)`);
      return { ...(await inclusion(index, checkpoint.size)), checkpoint };
    },
  };
}

function checkCount(value: number, field: string): void {
  if (!Number.isSafeInteger(value) || value < 0) throw InvalidArgumentError.of(field, "must be a non-negative integer");
}

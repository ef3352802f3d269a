import { TILE_WIDTH } from "../transparency/tiles.js";

/** An entry bundle gives each record a two-byte length, so no honest record is longer. */
const LARGEST_RECORD_BYTES = 0xffff;

/** The largest entry bundle any source can honestly serve: 256 records of the largest length (16 MiB). */
export const LARGEST_ENTRY_BUNDLE_BYTES = TILE_WIDTH * (2 + LARGEST_RECORD_BYTES);

/**
 * The largest answer read for each kind of request but entry bundles (MirrorSettings.maxBundleBytes);
 * a longer one is refused as it arrives, before it fills memory. Each is many times what an honest
 * source sends.
 */
export const LARGEST_ANSWER_BYTES = Object.freeze({
  /** {"origin", "verifierKey"}: a verifier key is under 200 characters. */
  logKey: 16 * 1024,
  /** A signed note: origin, size, root hash and a few signature lines. */
  checkpoint: 16 * 1024,
  /** {"proof": [...]}: at most 2 x 63 hashes of 44 base64 characters. */
  consistencyProof: 64 * 1024,
  /** The start of an error answer, for the message; the rest is not read. */
  errorText: 4 * 1024,
});

/** How long, and how much, the mirror waits for and reads from its source, and how much it writes at once. */
export interface MirrorSettings {
  /** Longest wait for a connection (name lookup, TCP and TLS handshakes). */
  readonly connectTimeout: number;
  /** Longest wait for an answer's headers, or for its next bytes. */
  readonly idleTimeout: number;
  /** Longest a whole request may take, however steadily its bytes come. */
  readonly requestTimeout: number;
  /** Largest entry bundle read. */
  readonly maxBundleBytes: number;
  /** Records written per transaction: what a stop or a failure can leave unwritten. */
  readonly batch: number;
}

/** A setting as the command line takes it. */
export interface MirrorSettingOption {
  readonly key: keyof MirrorSettings;
  /** Commander's spelling; the camel-cased long name is `key`. */
  readonly flag: string;
  readonly unit: string;
  readonly description: string;
  readonly default: number;
  readonly min: number;
  readonly max: number;
}

/** Each setting with its command-line option, default and bounds: the one declaration the CLI follows. */
export const MIRROR_SETTING_OPTIONS: readonly MirrorSettingOption[] = Object.freeze(
  (
    [
      {
        key: "connectTimeout",
        flag: "--connect-timeout <ms>",
        unit: "milliseconds",
        description: "longest wait to connect to the source",
        default: 10_000,
        min: 100,
        max: 600_000,
      },
      {
        key: "idleTimeout",
        flag: "--idle-timeout <ms>",
        unit: "milliseconds",
        description: "longest wait for the source's next bytes",
        default: 15_000,
        min: 100,
        max: 600_000,
      },
      {
        key: "requestTimeout",
        flag: "--request-timeout <ms>",
        unit: "milliseconds",
        description: "longest one request to the source may take in all",
        default: 120_000,
        min: 100,
        max: 3_600_000,
      },
      {
        key: "maxBundleBytes",
        flag: "--max-bundle-bytes <n>",
        unit: "bytes",
        description: "largest entry bundle read from the source",
        default: LARGEST_ENTRY_BUNDLE_BYTES,
        min: 1024,
        max: LARGEST_ENTRY_BUNDLE_BYTES,
      },
      {
        key: "batch",
        flag: "--batch <records>",
        unit: "records",
        description: "records verified and written per transaction",
        default: 512,
        min: 1,
        max: 4096,
      },
    ] satisfies MirrorSettingOption[]
  ).map((option) => Object.freeze(option)),
);

export const DEFAULT_MIRROR_SETTINGS: MirrorSettings = Object.freeze(
  Object.fromEntries(MIRROR_SETTING_OPTIONS.map((option) => [option.key, option.default])) as unknown as MirrorSettings,
);

/** The option that sets `key`, e.g. "--idle-timeout", for messages that say which bound was met. */
export function settingFlag(key: keyof MirrorSettings): string {
  return MIRROR_SETTING_OPTIONS.find((option) => option.key === key)!.flag.split(" ")[0]!;
}

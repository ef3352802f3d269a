import { createPrivateKey, createPublicKey } from "node:crypto";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from "jose";
import { ConfigError } from "../config.js";
import { UnavailableError } from "../errors.js";
import type { AuthRepository, IssuerKeyRecord, NewIssuerKey } from "./auth-repository.js";

/**
 * The token issuer's Ed25519 signing keys. They live in the database (created on first use,
 * rotatable), or come from the environment as one private JWK. The `kid` of a key is its RFC 7638
 * thumbprint, so the same key always has the same id wherever it is loaded.
 */

export const ISSUER_ALGORITHM = "EdDSA";

/** A public key as published in the JWKS. */
export interface PublicIssuerJwk {
  readonly kty: "OKP";
  readonly crv: "Ed25519";
  readonly x: string;
  readonly kid: string;
  readonly alg: "EdDSA";
  readonly use: "sig";
}

export interface IssuerSigningKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
}

/** What the issuer works with at one moment: the key that signs and the keys that verify. */
export interface IssuerKeySet {
  readonly signingKey: IssuerSigningKey;
  /** Newest first; the signing key's public half is always among them. */
  readonly publicKeys: readonly PublicIssuerJwk[];
}

export interface IssuerKeyOptions {
  readonly repository: AuthRepository;
  /** The longest lifetime of an access token; a retired key verifies for this long plus a margin. */
  readonly tokenMaxTtlSeconds: number;
  readonly clock?: () => Date;
  /** A private Ed25519 JWK given by the environment. When set, the database holds no keys. */
  readonly privateJwk?: JWK;
}

/**
 * A retired key stays published for the longest token lifetime plus this margin. The margin
 * covers processes that keep signing with a just-retired key until their key cache refreshes
 * (KEY_CACHE_MS) and the verifiers' clock tolerance, so no token outlives its key.
 */
const RETIRED_KEY_MARGIN_SECONDS = 60;
/** How long a process reuses the key set it read; must stay below RETIRED_KEY_MARGIN_SECONDS. */
const KEY_CACHE_MS = 30_000;
/** Least time between forced reloads, so tokens with made-up kids cannot hammer the database. */
const FORCED_RELOAD_COOLDOWN_MS = 2_000;

export async function generateIssuerKey(createdAt: Date): Promise<NewIssuerKey> {
  const { publicKey, privateKey } = await generateKeyPair(ISSUER_ALGORITHM, {
    crv: "Ed25519",
    extractable: true,
  });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  const privateJwk = await exportJWK(privateKey);
  return {
    kid,
    publicJwk: { ...publicJwk, kid, alg: ISSUER_ALGORITHM, use: "sig" },
    privateJwk: { ...privateJwk, kid, alg: ISSUER_ALGORITHM },
    createdAt,
  };
}

/**
 * The key that signs now: the one given by `privateJwk`, else the database's current key, created
 * when there is none. Safe when several processes start on an empty database at once: exactly one
 * insert wins (the database allows one current key) and every process then reads that key.
 */
export async function ensureSigningKey(options: IssuerKeyOptions): Promise<IssuerSigningKey> {
  if (options.privateJwk !== undefined) return (await keySetFromPrivateJwk(options.privateJwk)).signingKey;
  const current = await ensureCurrentKeyRecord(options.repository, clockOf(options));
  return signingKeyOf(current);
}

/**
 * Makes a new key current and retires the old one, which keeps verifying for the longest token
 * lifetime plus a margin so outstanding tokens stay valid. Resolves to the now-current key.
 * Two rotations at once both end well: one key wins and is returned to both.
 */
export async function rotateIssuerKey(options: IssuerKeyOptions): Promise<IssuerKeyRecord> {
  if (options.privateJwk !== undefined) {
    throw new ConfigError("the issuer key is given by the environment: rotate it there");
  }
  const { repository } = options;
  const now = clockOf(options)();
  const current = (await repository.listIssuerKeys({ retiredAfter: now })).find(isCurrent);
  const successor = await generateIssuerKey(now);
  // Retire first: the database allows one current key, so the successor can only go in after.
  // Crashing in between leaves no current key, which the next ensureSigningKey repairs.
  if (current !== undefined) await repository.retireKey(current.kid, now);
  await repository.insertIssuerKey(successor);
  return ensureCurrentKeyRecord(repository, clockOf(options));
}

/** Reads the key set: the signing key and every key that still verifies, newest first. */
export async function loadIssuerKeySet(options: IssuerKeyOptions): Promise<IssuerKeySet> {
  if (options.privateJwk !== undefined) return keySetFromPrivateJwk(options.privateJwk);
  const clock = clockOf(options);
  const current = await ensureCurrentKeyRecord(options.repository, clock);
  const records = await options.repository.listIssuerKeys({
    retiredAfter: verificationCutoff(clock(), options.tokenMaxTtlSeconds),
  });
  const publicKeys = records.map(publicJwkOf);
  // The current key may have been retired by another process between the two reads; it still
  // signs here until the next reload, so it must be published too.
  if (!publicKeys.some((key) => key.kid === current.kid)) publicKeys.unshift(publicJwkOf(current));
  return { signingKey: await signingKeyOf(current), publicKeys };
}

/** Key sets cached per process, reloaded after a short while or on demand. */
export interface IssuerKeyring {
  current(): Promise<IssuerKeySet>;
  /** Reloads now (at most every couple of seconds), e.g. when a token names an unknown kid. */
  reload(): Promise<IssuerKeySet>;
  /** Rotates the key (see rotateIssuerKey) and reloads, so this process signs with the new key. */
  rotate(): Promise<IssuerKeySet>;
}

export function createIssuerKeyring(options: IssuerKeyOptions): IssuerKeyring {
  let cached: { keySet: Promise<IssuerKeySet>; loadedAt: number } | undefined;

  function load(): Promise<IssuerKeySet> {
    const keySet = loadIssuerKeySet(options);
    const entry = { keySet, loadedAt: Date.now() };
    cached = entry;
    // A failed load must not be served from the cache.
    keySet.catch(() => {
      if (cached === entry) cached = undefined;
    });
    return keySet;
  }

  function ageMs(): number {
    return cached === undefined ? Infinity : Date.now() - cached.loadedAt;
  }

  return {
    current: () => (ageMs() < KEY_CACHE_MS ? cached!.keySet : load()),
    reload: () => (ageMs() < FORCED_RELOAD_COOLDOWN_MS ? cached!.keySet : load()),
    async rotate() {
      await rotateIssuerKey(options);
      return load();
    },
  };
}

/** The public half of a stored key, in the shape the JWKS publishes. */
export function publicJwkOf(record: Pick<IssuerKeyRecord, "kid" | "publicJwk">): PublicIssuerJwk {
  const { x } = record.publicJwk;
  if (typeof x !== "string") throw new UnavailableError(`issuer key ${record.kid} is damaged`);
  return { kty: "OKP", crv: "Ed25519", x, kid: record.kid, alg: ISSUER_ALGORITHM, use: "sig" };
}

async function ensureCurrentKeyRecord(repository: AuthRepository, clock: () => Date): Promise<IssuerKeyRecord> {
  // A lost insert costs one more round; a third only matters if keys are retired as fast as made.
  for (let attempt = 0; attempt < 3; attempt++) {
    const now = clock();
    const current = (await repository.listIssuerKeys({ retiredAfter: now })).find(isCurrent);
    if (current !== undefined) return current;
    // Losing this insert to a concurrent process is fine: the next read finds its key.
    await repository.insertIssuerKey(await generateIssuerKey(now));
  }
  throw new UnavailableError("the token issuer has no signing key");
}

async function keySetFromPrivateJwk(privateJwk: JWK): Promise<IssuerKeySet> {
  const { kty, crv, x, d } = privateJwk;
  if (kty !== "OKP" || crv !== "Ed25519" || typeof x !== "string" || typeof d !== "string") {
    throw new ConfigError('the issuer key must be an Ed25519 private JWK ({"kty":"OKP","crv":"Ed25519","x","d"})');
  }
  if (publicXOf({ kty, crv, x, d }) !== x) {
    throw new ConfigError('the issuer key\'s "x" is not the public half of its "d"');
  }
  const kid = await calculateJwkThumbprint({ kty, crv, x });
  const record = { kid, publicJwk: { kty, crv, x } };
  return {
    signingKey: await signingKeyOf({ kid, privateJwk }),
    publicKeys: [publicJwkOf(record)],
  };
}

/** The public key derived from the private scalar, so a JWK whose halves disagree is caught. */
function publicXOf(jwk: { kty: string; crv: string; x: string; d: string }): string | undefined {
  try {
    return createPublicKey(createPrivateKey({ key: jwk, format: "jwk" })).export({ format: "jwk" }).x;
  } catch {
    return undefined;
  }
}

async function signingKeyOf(record: Pick<IssuerKeyRecord, "kid" | "privateJwk">): Promise<IssuerSigningKey> {
  const { kty, crv, x, d } = record.privateJwk;
  const privateKey = await importJWK({ kty, crv, x, d }, ISSUER_ALGORITHM);
  if (privateKey instanceof Uint8Array) throw new ConfigError("the issuer key must be an Ed25519 key");
  return { kid: record.kid, privateKey };
}

function verificationCutoff(now: Date, tokenMaxTtlSeconds: number): Date {
  return new Date(now.getTime() - (tokenMaxTtlSeconds + RETIRED_KEY_MARGIN_SECONDS) * 1000);
}

function isCurrent(record: IssuerKeyRecord): boolean {
  return record.retiredAt === null;
}

function clockOf(options: IssuerKeyOptions): () => Date {
  return options.clock ?? (() => new Date());
}

import { createPrivateKey, createPublicKey, sign } from "node:crypto";
import type { Knex } from "knex";
import type { NoteSigner } from "../transparency/signed-note.js";
import { loadOrCreateSecret } from "./registry-secrets.js";

const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

/**
 * The transparency log's signer: the operator's seed (LOG_SIGNING_KEY), or one the registry made
 * and keeps in registry_secrets, so every process signs checkpoints with the same key.
 */
export async function openLogSigner(knex: Knex, origin: string, configured: Uint8Array | undefined): Promise<NoteSigner> {
  const seed = configured ?? new Uint8Array(await loadOrCreateSecret(knex, "log-signing-key", 32));
  return noteSignerFromSeed(origin, seed);
}

/** A note signer named `name` over the Ed25519 key of a 32-byte seed, with node:crypto. */
export function noteSignerFromSeed(name: string, seed: Uint8Array): NoteSigner {
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: "der", type: "pkcs8" });
  const { x } = createPublicKey(privateKey).export({ format: "jwk" });
  return {
    name,
    publicKey: new Uint8Array(Buffer.from(x as string, "base64url")),
    sign: (message) => new Uint8Array(sign(null, message, privateKey)),
  };
}

import { createHash } from "node:crypto";
import { createMerkleHasher, type MerkleHasher, type Sha256 } from "./merkle.js";

/** The server's SHA-256. Kept in its own file so the pure modules never import node:. */
export const nodeSha256: Sha256 = (bytes) => new Uint8Array(createHash("sha256").update(bytes).digest());

export const nodeMerkleHasher: MerkleHasher = createMerkleHasher(nodeSha256);

/**
 * R = B (the base point), S = 1: a signature whose R and S pass every check on their own, so it is
 * read, and then verifies nothing an honest key signed. [S]B = R + [k]A holds for every message
 * when A is the identity, which is why docs/signatures.md calls it the universal signature.
 */
export const BASE_POINT_SIGNATURE = "ed25519:WGZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmYBAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

import { describe, expect, it } from "vitest";
import { createLifecycleSigner } from "../../bench/lifecycle-bench.js";
import { createPublisher } from "../../bench/entry-signer.js";
import { createSignatureVerifier, parseSignature } from "../../src/domain/ed25519-signature.js";
import { ed25519KeyFromDid } from "../../src/domain/did-key.js";
import { lifecycleSigningPayload } from "../../src/domain/action-payloads.js";
import { validateLifecycleRequest } from "../../src/domain/action-rules.js";

/**
 * The lifecycle row's requests must be ones the registry accepts in the order sent: a refused
 * one would be measured as a fast failure, not as an action.
 */
describe("the bench's lifecycle signer", () => {
  const publisher = createPublisher();
  const names = ["a", "b", "c"];
  const decoded = (request: { path: string; body: string }) => ({
    did: decodeURIComponent(request.path.replace(/^\/v1\/entries\//, "").replace(/\/lifecycle$/, "")),
    ...(JSON.parse(request.body) as { action: string; reason: string; replacement: string; issuedAt: string; signature: string }),
  });

  it("signs valid requests the registry verifies with the publisher's key", async () => {
    const verifier = createSignatureVerifier();
    const { pool } = createLifecycleSigner(publisher, names).batch(6);
    for (const request of pool.map(decoded)) {
      const valid = validateLifecycleRequest(request, { now: new Date() });
      const payload = lifecycleSigningPayload({ ...valid, by: publisher.did });
      const key = ed25519KeyFromDid(publisher.did) as Uint8Array;
      expect(await verifier.verify(key, payload, parseSignature(request.signature) as Uint8Array)).toBe(true);
    }
  });

  it("alternates deprecate and undeprecate per name, with issuedAt always rising", () => {
    const { pool } = createLifecycleSigner(publisher, names).batch(9);
    const requests = pool.map(decoded);
    expect(requests.map((r) => `${r.did.split(":").at(-1)} ${r.action}`)).toEqual([
      "a@1.0.0 deprecate",
      "b@1.0.0 deprecate",
      "c@1.0.0 deprecate",
      "a@1.0.0 undeprecate",
      "b@1.0.0 undeprecate",
      "c@1.0.0 undeprecate",
      "a@1.0.0 deprecate",
      "b@1.0.0 deprecate",
      "c@1.0.0 deprecate",
    ]);
    const times = requests.map((r) => Date.parse(r.issuedAt));
    for (let i = 1; i < times.length; i++) expect(times[i]).toBeGreaterThan(times[i - 1]!);
  });

  it("re-signs the unsent part of a batch, so each name keeps alternating", () => {
    const signer = createLifecycleSigner(publisher, names);
    const first = signer.batch(6);
    first.commit(4); // a@dep b@dep c@dep a@undep sent
    const last = Date.parse(decoded(first.pool.at(-1)!).issuedAt);
    const second = signer.batch(3).pool.map(decoded);
    expect(second.map((r) => `${r.did.split(":").at(-1)} ${r.action}`)).toEqual([
      "b@1.0.0 undeprecate",
      "c@1.0.0 undeprecate",
      "a@1.0.0 deprecate",
    ]);
    expect(Date.parse(second[0]!.issuedAt)).toBeGreaterThan(last);
  });
});

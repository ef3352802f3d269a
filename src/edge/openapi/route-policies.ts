import type { DescMethod } from "@bufbuild/protobuf";
import { TokenService } from "../../../gen/auth/v1/token_service_pb.js";
import { RegistryService } from "../../../gen/registry/v1/registry_service_pb.js";

/**
 * What the OpenAPI document says about credentials and rate limits, per RPC. The protos carry no
 * option for either (the handlers authenticate, app.ts wires the limits), so this is the one
 * place the document reads them from; test/edge/openapi.test.ts checks it against a running
 * server's answers, so it cannot drift unnoticed.
 */

/** The bearer credential a method needs: an access token (JWT) for writes, a root token to get one. */
export type BearerScheme = "accessToken" | "rootToken";

const BEARER: ReadonlyMap<string, BearerScheme> = new Map([
  [keyOf(RegistryService.method.createEntry), "accessToken"],
  [keyOf(RegistryService.method.revokeEntry), "accessToken"],
  [keyOf(TokenService.method.issueToken), "rootToken"],
]);

/** Methods no rate limit applies to: the JWKS is public key material that verifiers fetch. */
const UNLIMITED: ReadonlySet<string> = new Set([keyOf(TokenService.method.getJwks)]);

/** The credential `method` needs, or undefined when anyone may call it. */
export function bearerSchemeOf(method: DescMethod): BearerScheme | undefined {
  return BEARER.get(keyOf(method));
}

/** Whether answers to `method` can carry RateLimit headers (and a 429), when limits are configured. */
export function isRateLimited(method: DescMethod): boolean {
  return !UNLIMITED.has(keyOf(method));
}

function keyOf(method: DescMethod): string {
  return `${method.parent.typeName}/${method.name}`;
}

import type { ServiceImpl } from "@connectrpc/connect";
import type { TokenService } from "../../gen/auth/v1/token_service_pb.js";
import type { TokenIssuer } from "../auth/token-issuer.js";
import { notePrincipal } from "./observability.js";

/**
 * auth.v1.TokenService over the token issuer. Domain errors pass through untouched: the error
 * mapping interceptor turns them into Connect codes for every protocol at once.
 */
export function createTokenServiceImpl(issuer: TokenIssuer): ServiceImpl<typeof TokenService> {
  return {
    async issueToken(request, context) {
      // A bearer credential: no cache may keep it (RFC 6749 §5.1).
      context.responseHeader.set("cache-control", "no-store");
      const issued = await issuer.issueToken(context.requestHeader.get("authorization"), {
        scopes: request.scopes,
        ttlSeconds: request.ttlSeconds,
      });
      // The root token's holder, for the access line: who was given a credential.
      notePrincipal(context.values, issued.subject);
      return { ...issued };
    },

    async getJwks(_request, context) {
      // Revalidated on every use (ETag), so a key rotated in is seen at once.
      context.responseHeader.set("cache-control", "no-cache");
      return { keys: (await issuer.jwks()).map((key) => ({ ...key })) };
    },
  };
}

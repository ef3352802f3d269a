import { ed25519KeyFromDid } from "../domain/did-key.js";
import { NotFoundError, ViolationList } from "../errors.js";
import type { AuthRepository, RootTokenRecord } from "./auth-repository.js";
import { generateRootToken, generateRootTokenId, hashRootToken, isKnownScope, isRootTokenId, knownScopes } from "./root-tokens.js";

/** Longest operator's note a root token keeps. */
export const MAX_ROOT_TOKEN_DESCRIPTION_CHARS = 500;

/** What an operator asks for when creating a root token. */
export interface RootTokenRequest {
  readonly subject: string;
  readonly scopes: readonly string[];
  readonly description: string;
}

/** A new root token: the secret, shown once, and its stored record. */
export interface CreatedRootToken {
  readonly token: string;
  readonly record: RootTokenRecord;
}

/**
 * The operator's root-token management, as auth.v1.AdminService offers it: requests are checked
 * here (field violations named as the request's fields), so a server never stores a root token
 * its issuer could not honour.
 */
export interface RootTokenAdmin {
  create(request: RootTokenRequest): Promise<CreatedRootToken>;
  list(): Promise<RootTokenRecord[]>;
  /** Revokes `id` (again keeps the first time) and returns its record; NotFoundError if none has it. */
  revoke(id: string): Promise<RootTokenRecord>;
}

export interface RootTokenAdminOptions {
  readonly repository: AuthRepository;
  readonly entryTypes: readonly string[];
}

export function createRootTokenAdmin({ repository, entryTypes }: RootTokenAdminOptions): RootTokenAdmin {
  return {
    async create(request) {
      const scopes = [...new Set(request.scopes.map((scope) => scope.trim()).filter((scope) => scope !== ""))];
      checkRootTokenRequest({ ...request, scopes }, entryTypes);
      const token = generateRootToken();
      const record = await repository.createRootToken({
        id: generateRootTokenId(),
        tokenHash: hashRootToken(token),
        subject: request.subject,
        scopes,
        description: request.description,
      });
      return { token, record };
    },

    list: () => repository.listRootTokens(),

    async revoke(id) {
      if (!isRootTokenId(id))
        throw new NotFoundError(`no root token has the id ${JSON.stringify(id.slice(0, 40))} (ids are rt_ and 16 hex digits)`);
      if (!(await repository.revokeRootToken(id))) throw new NotFoundError(`no root token has the id ${id}`);
      const record = await repository.findRootTokenById(id);
      if (record === undefined) throw new NotFoundError(`no root token has the id ${id}`);
      return record;
    },
  };
}

/** Every way a request breaks the rules, at once. */
function checkRootTokenRequest(request: RootTokenRequest, entryTypes: readonly string[]): void {
  const violations = new ViolationList();
  if (request.subject === "") violations.add("subject", "is required: the publisher's did:key");
  else {
    const key = ed25519KeyFromDid(request.subject);
    if ("error" in key) violations.add("subject", key.error);
  }
  if (request.scopes.length === 0) violations.add("scopes", `at least one is required: ${knownScopes(entryTypes).join(", ")}`);
  for (const [index, scope] of request.scopes.entries()) {
    if (!isKnownScope(scope, entryTypes)) violations.add(`scopes[${index}]`, `unknown scope; known: ${knownScopes(entryTypes).join(", ")}`);
  }
  if (request.description.length > MAX_ROOT_TOKEN_DESCRIPTION_CHARS) {
    violations.add("description", `must be at most ${MAX_ROOT_TOKEN_DESCRIPTION_CHARS} characters`);
  }
  violations.throwIfAny();
}

/** Scope that lets its holder revoke any entry (moderation). */
export const ADMIN_SCOPE = "registry.admin";
/** Prefix of the scopes that let their holder publish one entry type, or all with "*". */
export const PUBLISH_SCOPE_PREFIX = "registry.publish.";

/** The verified caller of a write: the subject DID its access token is bound to, and its scopes. */
export interface Principal {
  readonly subject: string;
  readonly scopes: readonly string[];
}

export function canPublish(principal: Principal, entryType: string): boolean {
  return principal.scopes.includes(PUBLISH_SCOPE_PREFIX + entryType) || principal.scopes.includes(`${PUBLISH_SCOPE_PREFIX}*`);
}

export function isAdmin(principal: Principal): boolean {
  return principal.scopes.includes(ADMIN_SCOPE);
}

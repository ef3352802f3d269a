import type { ServiceImpl } from "@connectrpc/connect";
import type { AdminService, RootToken } from "../../gen/auth/v1/admin_service_pb.js";
import type { AdminCredentialVerifier } from "../auth/admin-credential.js";
import type { RootTokenRecord } from "../auth/auth-repository.js";
import type { RootTokenAdmin } from "../auth/root-token-admin.js";
import { addressKey, clientAddressKey } from "./client-address.js";
import { notePrincipal } from "./observability.js";

/** How the access line names the caller of an admin call: the holder of the data directory's credential. */
const ADMIN_PRINCIPAL = "admin-credential";

/**
 * auth.v1.AdminService: root tokens for the holder of the admin credential. The credential is
 * checked before anything else, so without it no call learns even whether its request was valid.
 */
export function createAdminServiceImpl(credential: AdminCredentialVerifier, admin: RootTokenAdmin): ServiceImpl<typeof AdminService> {
  const authorize = (context: { requestHeader: Headers; responseHeader: Headers; values: Parameters<typeof notePrincipal>[0] }) => {
    // Secrets and the operator's list: no cache may keep either.
    context.responseHeader.set("cache-control", "no-store");
    // Wrong credentials are limited per client address, keyed as every per-address limit is.
    credential.verify(context.requestHeader.get("authorization"), addressKey(context.values.get(clientAddressKey)));
    notePrincipal(context.values, ADMIN_PRINCIPAL);
  };
  return {
    async createRootToken(request, context) {
      authorize(context);
      const created = await admin.create({ subject: request.subject, scopes: request.scopes, description: request.description });
      return { token: created.token, rootToken: rootTokenOf(created.record) };
    },

    async listRootTokens(_request, context) {
      authorize(context);
      return { rootTokens: (await admin.list()).map(rootTokenOf) };
    },

    async revokeRootToken(request, context) {
      authorize(context);
      return { rootToken: rootTokenOf(await admin.revoke(request.id)) };
    },
  };
}

function rootTokenOf(record: RootTokenRecord): Omit<RootToken, "$typeName"> {
  return {
    id: record.id,
    subject: record.subject,
    scopes: [...record.scopes],
    description: record.description,
    createdAt: record.createdAt.toISOString(),
    revokedAt: record.revokedAt?.toISOString(),
  };
}

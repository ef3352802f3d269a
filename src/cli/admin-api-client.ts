import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { AdminService, type RootToken } from "../../gen/auth/v1/admin_service_pb.js";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import type { RootTokenRecord } from "../auth/auth-repository.js";
import type { RootTokenAdmin } from "../auth/root-token-admin.js";
import { localRegistryUrl, type RegistryConfig } from "../config.js";
import { InvalidArgumentError, NotFoundError, UnauthenticatedError, UnavailableError, type RegistryError } from "../errors.js";
import type { DatabaseInUseError } from "../storage/database.js";
import { adminCredentialPath, readAdminCredential } from "../storage/admin-credential-file.js";

/** Root tokens through a running server's auth.v1.AdminService, and where that server is. */
export interface AdminApiConnection extends RootTokenAdmin {
  readonly url: string;
}

/** registryUrl is loadConfig's (REGISTRY_URL, else this host's server on PORT); port stands in when a caller gives none. */
type AdminApiConfig = Pick<RegistryConfig, "dataDir"> & Partial<Pick<RegistryConfig, "port" | "registryUrl">>;

/** PORT's default, for a caller that names neither a URL nor a port. */
const DEFAULT_PORT = 8080;

/** Longest a call may take: the server is on this host, and an admin call is a single statement. */
const CALL_TIMEOUT_MS = 15_000;

/**
 * The admin API of the server that holds the embedded database in `config.dataDir`, with the
 * credential it wrote there. `inUse` is why the database could not be opened: the start of every
 * message that explains why the server cannot be asked either.
 */
export async function connectAdminApi(config: AdminApiConfig, inUse: DatabaseInUseError): Promise<AdminApiConnection> {
  const path = adminCredentialPath(config.dataDir);
  const credential = await readAdminCredential(config.dataDir);
  const noAdminApi = `${inUse.message}. That server offers no admin API (no ${path}): stop it and run this again, or restart it without ADMIN_API=false`;
  if (credential === undefined || credential === "") throw new UnavailableError(noAdminApi);
  const url = config.registryUrl ?? localRegistryUrl(config.port ?? DEFAULT_PORT);
  const client = createClient(AdminService, createConnectTransport({ baseUrl: url, httpVersion: "1.1" }));
  const call = async <T>(
    work: (client: Client<typeof AdminService>, options: { headers: Record<string, string>; timeoutMs: number }) => Promise<T>,
  ) => {
    try {
      return await work(client, { headers: { authorization: `Bearer ${credential}` }, timeoutMs: CALL_TIMEOUT_MS });
    } catch (error) {
      throw failureOf(error, { url, path, noAdminApi });
    }
  };
  return {
    url,
    async create(request) {
      const answer = await call((admin, options) => admin.createRootToken({ ...request, scopes: [...request.scopes] }, options));
      return { token: answer.token, record: recordOf(answer.rootToken) };
    },
    async list() {
      const answer = await call((admin, options) => admin.listRootTokens({}, options));
      return answer.rootTokens.map(recordOf);
    },
    async revoke(id) {
      const answer = await call((admin, options) => admin.revokeRootToken({ id }, options));
      return recordOf(answer.rootToken);
    },
  };
}

/** A failed call as the error the command reports: the server's own words where it gave some. */
function failureOf(error: unknown, where: { url: string; path: string; noAdminApi: string }): RegistryError {
  const failure = ConnectError.from(error);
  switch (failure.code) {
    case Code.InvalidArgument: {
      const violations = failure.findDetails(BadRequestSchema).flatMap((details) => details.fieldViolations);
      if (violations.length === 0) return InvalidArgumentError.of("request", failure.rawMessage);
      return new InvalidArgumentError(violations.map(({ field, description }) => ({ field, description })));
    }
    case Code.NotFound:
      return new NotFoundError(failure.rawMessage);
    case Code.Unimplemented:
      return new UnavailableError(where.noAdminApi);
    case Code.Unauthenticated:
      return new UnauthenticatedError(
        `the server at ${where.url} refused the credential in ${where.path}: ${failure.rawMessage} (is REGISTRY_URL the server that holds this data directory?)`,
      );
    default:
      return new UnavailableError(
        `cannot ask the server at ${where.url} that holds the database (${failure.rawMessage}); set REGISTRY_URL to where it listens, or stop it and run this again`,
      );
  }
}

function recordOf(token: RootToken | undefined): RootTokenRecord {
  if (token === undefined) throw new UnavailableError("the server's answer carried no root token");
  return {
    id: token.id,
    subject: token.subject,
    scopes: token.scopes,
    description: token.description,
    createdAt: new Date(token.createdAt),
    revokedAt: token.revokedAt === undefined ? null : new Date(token.revokedAt),
  };
}

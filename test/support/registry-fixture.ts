import { startRegistry, type RunningRegistry } from "../../src/app.js";
import { createKnexAuthRepository } from "../../src/storage/knex-auth-repository.js";
import { generateRootToken, generateRootTokenId, hashRootToken } from "../../src/auth/root-tokens.js";
import { loadConfig, type RegistryConfig } from "../../src/config.js";
import type { Database } from "../../src/storage/database.js";
import { createTestDatabase, type TestDatabase } from "./test-database.js";
import { generateKeyPair, signEntry, signRevocation, type KeyPair } from "../../src/sdk/signing.js";
import { createLogger } from "../../src/logger.js";

export interface TestRegistry {
  readonly url: string;
  readonly running: RunningRegistry;
  /** A fresh root token for `subject`, allowed to grant `scopes`. */
  rootToken(subject: string, scopes: readonly string[]): Promise<string>;
  /** An access token for `subject` with `scopes`, issued through POST /v1/tokens. */
  accessToken(subject: string, scopes: readonly string[], ttlSeconds?: number): Promise<string>;
  close(): Promise<void>;
}

/** Quiet by default; REGISTRY_TEST_LOG=1 shows the server's log. */
const logger = createLogger(process.env.REGISTRY_TEST_LOG === "1" ? undefined : () => {});

export async function startTestRegistry(database: Database, overrides: Partial<RegistryConfig> = {}): Promise<TestRegistry> {
  // Rate limits are off unless a test asks for them: suites fire many reads, writes and token
  // requests (accessToken below) from one address and one publisher.
  const limitsOff = { rateLimitRps: 0, writeRateLimitRps: 0, tokenRateLimitRps: 0 };
  const config = loadConfig({}, { port: 0, host: "127.0.0.1", ...limitsOff, ...overrides });
  // The issuer's own URL is only known once it listens; tokens carry it as `iss`.
  const running = await startRegistry({ ...config, authUrl: overrides.authUrl ?? "http://registry.test" }, { logger, database });
  const repository = createKnexAuthRepository(database.knex);

  async function rootToken(subject: string, scopes: readonly string[]): Promise<string> {
    const token = generateRootToken();
    await repository.createRootToken({
      id: generateRootTokenId(),
      tokenHash: hashRootToken(token),
      subject,
      scopes,
      description: "test",
    });
    return token;
  }

  async function accessToken(subject: string, scopes: readonly string[], ttlSeconds?: number): Promise<string> {
    const root = await rootToken(subject, scopes);
    const response = await fetch(`${running.url}/v1/tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${root}`, "content-type": "application/json" },
      body: JSON.stringify({ scopes, ttlSeconds }),
    });
    const body = (await response.json()) as { accessToken?: string };
    if (response.status !== 200 || body.accessToken === undefined) {
      throw new Error(`token issuance failed: ${response.status} ${JSON.stringify(body)}`);
    }
    return body.accessToken;
  }

  return { url: running.url, running, rootToken, accessToken, close: () => running.close() };
}

/** A publisher with its own key, able to build signed entries and revocations. */
export interface TestPublisher {
  readonly did: string;
  readonly keys: KeyPair;
  entry(name: string, version: string, fields?: Record<string, unknown>): Promise<Record<string, any>>;
  revocation(did: string, reason: string): Promise<{ reason: string; signature: string }>;
}

export async function createPublisher(entryType = "skill"): Promise<TestPublisher> {
  const keys = await generateKeyPair();
  return {
    did: keys.did,
    keys,
    async entry(name, version, fields = {}) {
      const type = (fields.entryType as string | undefined) ?? entryType;
      const unsigned: Record<string, any> = {
        entryDid: `did:reg:main:${type}:${name}@${version}`,
        entryType: type,
        version,
        publisherDid: keys.did,
        publishedAt: new Date(Math.floor(Date.now() / 1000) * 1000).toISOString(),
        description: `The ${name} ${type}`,
        tags: ["search", "web"],
        data: { license: "MIT" },
        contentHash: `sha256:${"ab".repeat(32)}`,
        bondAmount: "100 USDC",
        ...fields,
      };
      return { ...unsigned, signature: await signEntry(unsigned as any, keys.privateKey) };
    },
    async revocation(did, reason) {
      return { reason, signature: await signRevocation(did, reason, keys.privateKey) };
    },
  };
}

/** A registry on a fresh test database, and one publisher with an access token. */
export interface PublishingSetup {
  readonly db: TestDatabase;
  readonly registry: TestRegistry;
  readonly publisher: TestPublisher;
  /** The publisher's access token for the scopes asked. */
  readonly token: string;
  /** Stops the registry and drops its database. */
  close(): Promise<void>;
}

/** Settings for a test registry, or a function of its database for those that name it (a read URL). */
export type RegistryOverrides = Partial<RegistryConfig> | ((db: TestDatabase) => Partial<RegistryConfig>);

/** A registry on a fresh test database of its own. */
export interface FreshRegistry {
  readonly db: TestDatabase;
  readonly registry: TestRegistry;
  /** Stops the registry and drops its database. */
  close(): Promise<void>;
}

export async function startRegistryOnFreshDatabase(overrides: RegistryOverrides = {}): Promise<FreshRegistry> {
  const db = await createTestDatabase();
  const registry = await startTestRegistry(db.database, typeof overrides === "function" ? overrides(db) : overrides);
  return {
    db,
    registry,
    async close() {
      await registry.close();
      await db.drop();
    },
  };
}

/** The start most test files share: a database, a registry on it, a publisher and its token. */
export async function startPublishingRegistry(scopes: readonly string[], overrides: RegistryOverrides = {}): Promise<PublishingSetup> {
  const fresh = await startRegistryOnFreshDatabase(overrides);
  const publisher = await createPublisher();
  const token = await fresh.registry.accessToken(publisher.did, scopes);
  return { ...fresh, publisher, token };
}

import { ConfigError } from "../config.js";
import { openDatabase, type Database, type DatabaseOptions } from "./database.js";
import type { WalPositions } from "./replica-freshness.js";

/** How read pools name their connections in pg_stat_activity. */
export const READ_POOL_APPLICATION_NAME = "registry-read";

/**
 * Pools for the read replicas. They connect lazily, so a replica that is down at start costs
 * nothing until a read is sent to it (and then rests; see read-routing.ts).
 */
export async function openReadReplicas(urls: readonly string[], options: Omit<DatabaseOptions, "databaseUrl">): Promise<Database[]> {
  const replicas: Database[] = [];
  for (const url of urls) {
    replicas.push(await openDatabase({ ...options, databaseUrl: url, applicationName: READ_POOL_APPLICATION_NAME }));
  }
  return replicas;
}

/** The byte offset of a pg_lsn, computed by Postgres and read as text: it can exceed 2^53. */
const PRIMARY_POSITION_SQL = "select (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::text as position";
/**
 * A standby's replayed position. A server that is not in recovery is taken to be the primary
 * itself (checkSameCluster makes sure of that), which is always caught up with itself.
 */
const REPLAYED_POSITION_SQL = `select (case when pg_is_in_recovery()
  then coalesce(pg_last_wal_replay_lsn(), '0/0'::pg_lsn)
  else pg_current_wal_insert_lsn() end - '0/0'::pg_lsn)::text as position`;

async function positionOf(database: Database, sql: string): Promise<bigint> {
  const result = await database.knex.raw<{ rows: Array<{ position: string }> }>(sql);
  return BigInt(result.rows[0]!.position.split(".")[0]!);
}

export function createWalPositions(primary: Database, replicas: readonly Database[]): WalPositions {
  return {
    primary: () => positionOf(primary, PRIMARY_POSITION_SQL),
    async replayedByAll() {
      const replayed = await Promise.all(replicas.map((replica) => positionOf(replica, REPLAYED_POSITION_SQL)));
      // biome-ignore lint/complexity/useMathMinMax: positions are bigints, which Math.min refuses
      return replayed.reduce((least, position) => (position < least ? position : least));
    },
  };
}

const SYSTEM_IDENTIFIER_SQL = "select system_identifier::text as id from pg_control_system()";

/**
 * Refuses to start with a "replica" that belongs to another cluster: WAL positions compare only
 * within one cluster, and reads from an unrelated database would be silently wrong. A streaming
 * replica shares its primary's system identifier. A replica that cannot be reached now is not
 * checked (it may come up later); `onUnchecked` says so.
 */
export async function checkSameCluster(
  primary: Database,
  replicas: readonly Database[],
  onUnchecked: (replica: number, error: unknown) => void,
): Promise<void> {
  const primaryId = await systemIdentifier(primary);
  for (const [index, replica] of replicas.entries()) {
    let replicaId: string;
    try {
      replicaId = await systemIdentifier(replica);
    } catch (error) {
      onUnchecked(index, error);
      continue;
    }
    if (replicaId !== primaryId) {
      throw new ConfigError(
        `DATABASE_READ_URL: replica ${index + 1} is not a streaming replica of DATABASE_URL (its system identifier differs from the primary's)`,
      );
    }
  }
}

async function systemIdentifier(database: Database): Promise<string> {
  const result = await database.knex.raw<{ rows: Array<{ id: string }> }>(SYSTEM_IDENTIFIER_SQL);
  return result.rows[0]!.id;
}

import { clickhouseFileReadModel, clickhouseFileReadModelWriter, LIVE_FILE_TABLES, quoteIdentifier, type FileTables } from '@meridian/clickhouse';
import type { FileEvent, Offsets } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { consumerGroupsFor } from '@meridian/kafka';
import type { ReplayDeps } from '../deps.ts';
import { inRange, suffixed, type ReadModelKind, type ReadModelVerification } from '../read-models/rebuild.ts';
import { eventsAfter, projectFileBatch } from '@meridian/projection';

/** The files read model (migration 005) as a rebuild sees it: `meridian replay rebuild files`. */
export const FILES_READ_MODEL: ReadModelKind = {
  name: 'files',
  topic: (deps) => deps.topics.files,
  live: LIVE_FILE_TABLES,
  rebuilt: suffixed(LIVE_FILE_TABLES, '_rebuilt'),
  retired: suffixed(LIVE_FILE_TABLES, '_retired'),
  frozen: suffixed(LIVE_FILE_TABLES, '_frozen'),
  groupId: (deps) => consumerGroupsFor(deps.topicPrefix).filesProjector,
  start(deps, persist) {
    const seq = { next: 0 };
    const codec = createEventCodec<FileEvent>();
    return async (tables, partition, messages, last) => {
      const t = tables as FileTables;
      const step = { readModel: clickhouseFileReadModel(deps.clickhouseOptions, t), writer: clickhouseFileReadModelWriter(deps.clickhouse, t), persist, seq };
      return projectFileBatch(step, partition, eventsAfter(codec, partition, messages, -1), last);
    };
  },
  positions: (deps, tables) => clickhouseFileReadModel(deps.clickhouseOptions, tables as FileTables).positions(),
  verify: (deps, rebuilt, ends) => verifyFiles(deps, rebuilt as FileTables, ends),
};

/**
 * Compares the live files read model with a rebuilt one over the rebuilt range: every live
 * `files` row (state and deletion) and every live `file_listing` row (who sees which file, and
 * what the list shows) whose last change lies inside the range must be in the rebuild, equal
 * (a row that gives no access equals no row).
 */
export async function verifyFiles(deps: Pick<ReplayDeps, 'clickhouse'>, rebuilt: FileTables, ends: Offsets): Promise<ReadModelVerification> {
  const compare = (key: string, value: string, live: string, copy: string) =>
    `SELECT count() AS compared, countIf(r.rebuilt != l.value) AS differing FROM ` +
    `(SELECT ${key} AS k, ${value} AS value FROM (SELECT * FROM ${quoteIdentifier(live)} FINAL) WHERE ${inRange(ends)}) AS l ` +
    `ANY LEFT JOIN (SELECT ${key} AS k, ${value} AS rebuilt FROM ${quoteIdentifier(copy)} FINAL) AS r USING k`;
  const query =
    `SELECT toString(sum(compared)) AS compared, toString(sum(differing)) AS differing FROM (` +
    `${compare('file_id', `concat(state, '|', toString(deleted))`, LIVE_FILE_TABLES.files, rebuilt.files)} UNION ALL ` +
    // A row of someone who lost sight of a file is bookkeeping (which file state it carries, or
    // whether a grant given and revoked inside one batch left one, depends on the batches): it
    // compares as empty, as a row the other side lacks does.
    `${compare(`concat(user_name, '|', toString(seq))`, `if(access = '', '', concat(file_id, '|', access, '|', owner, '|', file_name, '|', name_lower, '|', description, '|', toString(size), '|', toString(created_at)))`, LIVE_FILE_TABLES.listing, rebuilt.listing)})`;
  const [row] = await (await deps.clickhouse.query({ query, format: 'JSONEachRow' })).json<{ compared: string; differing: string }>();
  const compared = Number(row?.compared ?? 0);
  const differing = Number(row?.differing ?? 0);
  return { compared, differing, verified: differing === 0 };
}

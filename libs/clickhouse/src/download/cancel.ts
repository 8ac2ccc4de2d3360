import { queryText, type ConnOptions } from './http.ts';
import { isUuid } from '@meridian/domain';

/**
 * Stops on the server every query whose id is `queryId` or starts with it: a download's (the
 * stream's parts: the request's queryId, then queryId + a suffix; the plan's: queryId + a
 * suffix) or a background pass's. Closing the connection is not enough: 18.16 notices only at
 * its next write, and a sort or an INSERT … SELECT writes nothing to it until it is done. The id is checked to be a UUID, so it can be inlined (a UUID holds no LIKE
 * wildcard). SYNC: resolves once the queries are gone.
 *
 * Two passes: a query (a part prefetched) started just before the abort may have its request on the
 * way while the first KILL runs, and register only after it; its request went out before the
 * first KILL's, so by the time that one has answered it has registered, and the second pass
 * stops it. (No part starts after the abort: a request started with an aborted signal is
 * never sent.) `signal` bounds the wait, for a caller that must not hang on a server that does not
 * answer.
 */
export async function cancelQueries(conn: ConnOptions, queryId: string, signal?: AbortSignal): Promise<void> {
  if (!isUuid(queryId)) throw new TypeError('queryId must be a UUID');
  const kill = () => queryText(conn, { sql: `KILL QUERY WHERE query_id LIKE '${queryId}%' SYNC FORMAT Null`, ...(signal ? { signal } : {}) });
  await kill();
  await kill();
}

/** Query ids of the plan's steps: distinct, because 18.16 refuses an id that is still registered. */
export const planQueryId = (queryId: string, step: string) => `${queryId}-${step}`;

/**
 * Stops the queries of one part of a request (query id = queryId-part, and that with a suffix),
 * leaving its other queries running: a read started ahead and then not needed. Not SYNC: nothing
 * waits for it. The part is checked to be lower-case letters and digits, so it can be inlined.
 */
export async function cancelQueryPart(conn: ConnOptions, queryId: string, part: string): Promise<void> {
  if (!isUuid(queryId) || !/^[a-z0-9]+$/.test(part)) throw new TypeError('queryId must be a UUID and part letters or digits');
  await queryText(conn, { sql: `KILL QUERY WHERE query_id LIKE '${queryId}-${part}%' FORMAT Null` });
}

import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What the gate does with a query its rule matches:
 * - refuse: answers 500 with a ClickHouse-style exception; the server never sees it.
 * - hold: never forwards it and never answers (a server that does not answer): only the client
 *   giving the request up, or dying, ends it.
 * - crash_before: calls the rule's `then` (the test kills the app) and forwards nothing.
 * - crash_after: forwards it, and once the server's whole answer is in (the server did the
 *   step), calls `then` (the test kills the app) and never passes the answer on.
 */
export type GateAction = 'refuse' | 'hold' | 'crash_before' | 'crash_after';

export type GateRule = {
  /** Tested against the query text (the `query` URL parameter, a newline, the start of the body). */
  readonly match: RegExp;
  readonly action: GateAction;
  /** Applies only once a query matching this has passed (forwarded and answered). */
  readonly after?: RegExp;
  /** Applies to the first matching query only. */
  readonly once?: boolean;
  /** Called for crash_before and crash_after (synchronously: a SIGKILL sent here lands before any answer). */
  readonly then?: () => void;
};

/**
 * An HTTP proxy in front of ClickHouse for one app process that forwards every query except
 * the ones a test's rule names, which it refuses, holds, or uses as the moment to kill the app
 * (before the server runs the query, or after the server ran it and before the app hears so):
 * the crash points of a multi-step procedure, with nothing test-only in the app's code.
 */
export type QueryGate = {
  readonly url: string;
  /** Replaces the rules (none: every query is forwarded); the connections of held queries are reset. */
  set(...rules: GateRule[]): void;
  /** How many queries each rule has matched so far, in the order set. */
  hits(): number[];
  close(): Promise<void>;
};

/** Bytes of a request body kept for matching: enough for any statement. */
const KEPT_BODY_BYTES = 4096;

export async function startQueryGate(target: string): Promise<QueryGate> {
  const upstream = new URL(target);
  let rules: Array<{ rule: GateRule; hits: number }> = [];
  const passed: string[] = [];
  const held = new Set<http.ServerResponse>();

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', upstream);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const text = `${url.searchParams.get('query') ?? ''}\n${body.subarray(0, KEPT_BODY_BYTES).toString('latin1')}`;
      const entry = rules.find(
        ({ rule, hits }) => rule.match.test(text) && !(rule.once === true && hits > 0) && (rule.after === undefined || passed.some((q) => rule.after!.test(q))),
      );
      if (entry !== undefined) entry.hits += 1;
      const action = entry?.rule.action;
      if (action === 'refuse') {
        res.writeHead(500, { 'content-type': 'text/plain', 'x-clickhouse-exception-code': '999' });
        res.end("Code: 999, e.displayText() = DB::Exception: refused by the test's query gate\n");
        return;
      }
      if (action === 'hold') {
        held.add(res);
        res.on('close', () => held.delete(res));
        return;
      }
      if (action === 'crash_before') {
        entry!.rule.then?.();
        return;
      }
      const forward = http.request(url, { method: req.method, headers: { ...req.headers, host: upstream.host } }, (answer) => {
        if (action === 'crash_after') {
          answer.resume();
          answer.on('end', () => {
            passed.push(text);
            entry!.rule.then?.();
          });
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.on('end', () => passed.push(text));
      });
      forward.on('error', () => res.destroy());
      res.on('close', () => {
        if (!res.writableFinished && action !== 'crash_after') forward.destroy();
      });
      forward.end(body);
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    set(...next) {
      rules = next.map((rule) => ({ rule, hits: 0 }));
      for (const res of held) res.socket?.resetAndDestroy();
      held.clear();
    },
    hits: () => rules.map((r) => r.hits),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

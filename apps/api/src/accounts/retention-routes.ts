import { z } from 'zod';
import { decideRemoveRetention, decideSetRetention, formatTimestamp, retentionKey, validationError, type RetentionRule } from '@meridian/domain';
import { defineRoute, type RouteDef } from '../http/route.ts';
import type { AccountsCommands } from './commands.ts';

const DAY_MS = 86_400_000;

const ruleView = z.object({
  match: z.enum(['exact', 'prefix']),
  value: z.string().describe('the metric name, or the prefix of the names'),
  keep_seconds: z.number().int().describe('raw points older than this are deleted'),
  days: z.number().describe('the same, in days'),
  set_at: z.string(),
  set_by: z.string(),
});
const rulesView = z.object({ rules: z.array(ruleView) });
const selector = z.object({ match: z.enum(['exact', 'prefix']), value: z.string().min(1).max(1000) });

const view = (r: RetentionRule) => ({
  match: r.match,
  value: r.value,
  keep_seconds: Math.round(r.keep_ms / 1000),
  days: r.keep_ms / DAY_MS,
  set_at: formatTimestamp(r.set_at),
  set_by: r.actor,
});
const rulesOf = (accounts: AccountsCommands) => ({
  rules: [...accounts.state.retention.values()].sort((a, b) => (a.match + a.value).localeCompare(b.match + b.value)).map(view),
});

const ABOUT =
  'Retention per pattern: the raw points of the metrics a rule matches (exact name, or prefix, as entitlements) whose timestamp is older than the rule keeps are deleted by the ingest worker every MERIDIAN_POINTS_RETENTION_INTERVAL_MS, each time as a deletion in the log (a points_deletion task by user "retention"). A metric follows its exact rule, else its longest prefix rule; metrics without a rule keep every point.';

/** GET, PUT and DELETE /api/v1/retention: the rules, events on the accounts topic (admins only). */
export function retentionRoutes(accounts: AccountsCommands): RouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/api/v1/retention',
      operationId: 'listRetentionRules',
      summary: 'The retention rules (admin)',
      description: ABOUT,
      tags: ['metrics'],
      auth: 'admin',
      responses: { 200: { description: 'Every rule', schema: rulesView } },
      handler: (ctx) => {
        ctx.body = rulesOf(accounts);
      },
    }),
    defineRoute({
      method: 'PUT',
      path: '/api/v1/retention',
      operationId: 'setRetentionRule',
      summary: 'Set how long the raw points of a pattern are kept (admin)',
      description: `${ABOUT} Setting a rule for a match and value replaces the one they had. Give days or seconds, not both: from one second to 1000 years.`,
      tags: ['metrics'],
      auth: 'admin',
      body: selector.extend({
        days: z.number().positive().optional().describe('how long raw points are kept, in days (fractions allowed)'),
        seconds: z.number().int().positive().optional().describe('the same in seconds'),
      }),
      responses: { 200: { description: 'Every rule, after the change', schema: rulesView } },
      problems: ['validation'],
      handler: async (ctx, { body, user }) => {
        if ((body.days === undefined) === (body.seconds === undefined))
          throw validationError('give days or seconds (one of them)', [{ field: 'days', reason: 'exactly one of days and seconds' }]);
        const keepMs = body.days !== undefined ? Math.round(body.days * DAY_MS) : body.seconds! * 1000;
        await accounts.execute(retentionKey(body.match, body.value), (s) =>
          decideSetRetention(s.retention, { match: body.match, value: body.value, keep_ms: keepMs, at: Date.now(), actor: user.user_name }),
        );
        ctx.body = rulesOf(accounts);
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/api/v1/retention',
      operationId: 'removeRetentionRule',
      summary: 'Remove a retention rule (admin)',
      description: 'The metrics it matched keep their points from now on (or follow another rule that matches them); points already deleted stay deleted.',
      tags: ['metrics'],
      auth: 'admin',
      query: selector,
      responses: { 204: { description: 'Removed' } },
      problems: ['not_found'],
      handler: async (ctx, { query, user }) => {
        await accounts.execute(retentionKey(query.match, query.value), (s) =>
          decideRemoveRetention(s.retention, { match: query.match, value: query.value, at: Date.now(), actor: user.user_name }),
        );
        ctx.status = 204;
      },
    }),
  ];
}

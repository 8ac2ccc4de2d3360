import { notFound, validationError, type FieldError } from '../errors.ts';
import type { MetricMatch } from '../accounts/events.ts';

/** Events of the accounts topic (admin configuration, like entitlements), keyed by `retention:<match>:<value>`. */
export type RetentionRuleSet = {
  readonly type: 'RetentionRuleSet';
  readonly match: MetricMatch;
  readonly value: string;
  readonly keep_ms: number;
  readonly at: number;
  readonly actor: string;
};
export type RetentionRuleRemoved = {
  readonly type: 'RetentionRuleRemoved';
  readonly match: MetricMatch;
  readonly value: string;
  readonly at: number;
  readonly actor: string;
};
export type RetentionEvent = RetentionRuleSet | RetentionRuleRemoved;

/** Raw points of the metrics a pattern matches are kept `keep_ms`; older ones are deleted on a schedule. */
export type RetentionRule = { readonly match: MetricMatch; readonly value: string; readonly keep_ms: number; readonly set_at: number; readonly actor: string };

export type RetentionRules = Map<string, RetentionRule>;

/** Longest a rule may keep points: 1000 years (more is no rule). */
export const MAX_KEEP_MS = 1000 * 366 * 86_400_000;
const MAX_VALUE = 1000;

export const retentionKey = (match: MetricMatch, value: string): string => `retention:${match}:${value}`;

/** The fold's share of the accounts topic: rules by key, the newest of each. */
export function applyRetentionEvent(rules: RetentionRules, event: RetentionEvent): void {
  const key = retentionKey(event.match, event.value);
  if (event.type === 'RetentionRuleSet')
    rules.set(key, { match: event.match, value: event.value, keep_ms: event.keep_ms, set_at: event.at, actor: event.actor });
  else rules.delete(key);
}

export function decideSetRetention(rules: RetentionRules, cmd: { match: string; value: string; keep_ms: number; at: number; actor: string }): RetentionEvent[] {
  const errors: FieldError[] = [];
  if (cmd.match !== 'exact' && cmd.match !== 'prefix') errors.push({ field: 'match', reason: 'must be "exact" or "prefix"' });
  if (cmd.value.length === 0 || cmd.value.length > MAX_VALUE)
    errors.push({ field: 'value', reason: `a metric name or prefix of 1 to ${MAX_VALUE} characters` });
  if (!Number.isSafeInteger(cmd.keep_ms) || cmd.keep_ms < 1000 || cmd.keep_ms > MAX_KEEP_MS)
    errors.push({ field: 'keep', reason: 'from one second to 1000 years' });
  if (errors.length > 0) throw validationError(`invalid retention rule: ${errors.map((e) => `${e.field} ${e.reason}`).join('; ')}`, errors);
  const match = cmd.match as MetricMatch;
  if (rules.get(retentionKey(match, cmd.value))?.keep_ms === cmd.keep_ms) return [];
  return [{ type: 'RetentionRuleSet', match, value: cmd.value, keep_ms: cmd.keep_ms, at: cmd.at, actor: cmd.actor }];
}

export function decideRemoveRetention(rules: RetentionRules, cmd: { match: string; value: string; at: number; actor: string }): RetentionEvent[] {
  if ((cmd.match !== 'exact' && cmd.match !== 'prefix') || !rules.has(retentionKey(cmd.match, cmd.value))) throw notFound('no such retention rule');
  return [{ type: 'RetentionRuleRemoved', match: cmd.match, value: cmd.value, at: cmd.at, actor: cmd.actor }];
}

/**
 * The rule each metric follows: its exact rule, else its longest matching prefix (as the most
 * specific entitlement wins). Metrics without a rule are kept forever.
 */
export function ruleOf(rules: Iterable<RetentionRule>, name: string): RetentionRule | null {
  let best: RetentionRule | null = null;
  for (const rule of rules) {
    if (rule.match === 'exact' ? rule.value !== name : !name.startsWith(rule.value)) continue;
    if (best === null || (rule.match === 'exact' && best.match !== 'exact') || (rule.match === best.match && rule.value.length > best.value.length))
      best = rule;
  }
  return best;
}

/** The metrics of each rule now: per rule, its metrics and the cutoff (points with ts below it are past it). */
export function retentionPlan(
  rules: Iterable<RetentionRule>,
  names: Iterable<string>,
  now: number,
): Array<{ rule: RetentionRule; cutoff: number; metrics: string[] }> {
  const list = [...rules];
  const byRule = new Map<RetentionRule, string[]>();
  for (const name of names) {
    const rule = ruleOf(list, name);
    if (rule !== null) byRule.set(rule, [...(byRule.get(rule) ?? []), name]);
  }
  return [...byRule].map(([rule, metrics]) => ({ rule, cutoff: now - rule.keep_ms, metrics: metrics.sort() }));
}

import { describe, expect, it } from 'vitest';
import type { DomainError } from '../errors.ts';
import { applyRetentionEvent, decideRemoveRetention, decideSetRetention, retentionPlan, ruleOf, type RetentionRule, type RetentionRules } from './rules.ts';

const rule = (match: 'exact' | 'prefix', value: string, keep_ms: number): RetentionRule => ({ match, value, keep_ms, set_at: 0, actor: 'a' });
const codeOf = (f: () => unknown) => {
  try {
    f();
    return null;
  } catch (e) {
    return (e as DomainError).code;
  }
};

describe('retention rules', () => {
  it('are set, replaced and removed by events; an unchanged rule writes none', () => {
    const rules: RetentionRules = new Map();
    const set = decideSetRetention(rules, { match: 'prefix', value: 'cpu:', keep_ms: 5000, at: 1, actor: 'root' });
    expect(set).toEqual([{ type: 'RetentionRuleSet', match: 'prefix', value: 'cpu:', keep_ms: 5000, at: 1, actor: 'root' }]);
    for (const e of set) applyRetentionEvent(rules, e);
    expect(decideSetRetention(rules, { match: 'prefix', value: 'cpu:', keep_ms: 5000, at: 2, actor: 'root' })).toEqual([]);
    for (const e of decideRemoveRetention(rules, { match: 'prefix', value: 'cpu:', at: 3, actor: 'root' })) applyRetentionEvent(rules, e);
    expect(rules.size).toBe(0);
    expect(codeOf(() => decideRemoveRetention(rules, { match: 'prefix', value: 'cpu:', at: 3, actor: 'root' }))).toBe('not_found');
    expect(codeOf(() => decideSetRetention(rules, { match: 'glob', value: 'cpu:', keep_ms: 5000, at: 1, actor: 'root' }))).toBe('validation');
    expect(codeOf(() => decideSetRetention(rules, { match: 'exact', value: 'cpu', keep_ms: 10, at: 1, actor: 'root' }))).toBe('validation');
  });

  it('a metric follows its exact rule, else its longest prefix; metrics without one keep everything', () => {
    const rules = [rule('prefix', 'cpu', 1000), rule('prefix', 'cpu:load', 2000), rule('exact', 'cpu:load:1', 3000)];
    expect(ruleOf(rules, 'cpu:load:1')?.keep_ms).toBe(3000);
    expect(ruleOf(rules, 'cpu:load:2')?.keep_ms).toBe(2000);
    expect(ruleOf(rules, 'cpu.x')?.keep_ms).toBe(1000);
    expect(ruleOf(rules, 'mem')).toBeNull();
    expect(retentionPlan(rules, ['mem', 'cpu:load:2', 'cpu.x', 'cpu:load:3'], 10_000)).toEqual([
      { rule: rules[1], cutoff: 8000, metrics: ['cpu:load:2', 'cpu:load:3'] },
      { rule: rules[0], cutoff: 9000, metrics: ['cpu.x'] },
    ]);
  });
});

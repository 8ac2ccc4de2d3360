import type { SyntaxNode } from '@lezer/common';
import { parser } from '@prometheus-io/lezer-promql';
import { RE2JS } from 're2js';
import { LABEL_NAME_RE } from '../series/labels.ts';
import {
  AGGREGATIONS,
  INSTANT_FUNCTIONS,
  RANGE_FUNCTIONS,
  isComparison,
  isSetOperator,
  typeOf,
  type AggregateOp,
  type BinaryOp,
  type Expr,
  type FunctionName,
  type MatchOp,
  type Matcher,
  type ValueType,
  type VectorMatching,
  type VectorSelector,
} from './ast.ts';
import { parseDurationMs } from './durations.ts';
import { badData, unsupported } from './errors.ts';
import { unquote } from './strings.ts';

/**
 * PromQL text to the tree Meridian evaluates. The syntax is Prometheus' own grammar
 * (@prometheus-io/lezer-promql, the parser of Prometheus' web UI); the type rules are those of
 * Prometheus' parser, with its messages; everything outside the supported subset is refused by
 * name (422), never evaluated approximately.
 */
export function parsePromql(text: string): Expr {
  if (text.trim() === '') throw badData('no expression found in input');
  const tree = parser.parse(text);
  tree.iterate({
    enter(n) {
      if (n.type.isError) {
        const call = /([a-zA-Z_][a-zA-Z0-9_]*)\s*$/.exec(text.slice(0, n.from));
        if (call && text[n.from] === '(') {
          if (PROMETHEUS_FUNCTIONS.has(call[1]!)) throw unsupported(`the function ${call[1]}()`);
          throw badData(`unknown function with name ${JSON.stringify(call[1])}`);
        }
        const near = text.slice(n.from, n.from + 10);
        throw badData(`parse error at char ${n.from + 1}: unexpected ${near === '' ? 'end of input' : JSON.stringify(near)}`);
      }
    },
  });
  const top = tree.topNode.firstChild;
  if (!top) throw badData('no expression found in input');
  let next = 0;
  const b = new Builder(text, () => next++);
  return b.expr(top);
}

/** Functions of Prometheus 2 that the grammar of Prometheus 3 no longer knows: refused by name, not as unknown. */
const PROMETHEUS_FUNCTIONS = new Set(['holt_winters']);

const TYPE_NAMES: Record<ValueType, string> = { scalar: 'scalar', vector: 'instant vector', matrix: 'range vector', string: 'string' };

/** The argument types of each supported function; a trailing `?` marks optional ones. */
const SIGNATURES: Record<FunctionName, readonly (ValueType | `${ValueType}?`)[]> = {
  rate: ['matrix'],
  irate: ['matrix'],
  increase: ['matrix'],
  delta: ['matrix'],
  deriv: ['matrix'],
  resets: ['matrix'],
  changes: ['matrix'],
  avg_over_time: ['matrix'],
  min_over_time: ['matrix'],
  max_over_time: ['matrix'],
  sum_over_time: ['matrix'],
  count_over_time: ['matrix'],
  last_over_time: ['matrix'],
  quantile_over_time: ['scalar', 'matrix'],
  idelta: ['matrix'],
  predict_linear: ['matrix', 'scalar'],
  absent_over_time: ['matrix'],
  absent: ['vector'],
  abs: ['vector'],
  ceil: ['vector'],
  floor: ['vector'],
  sqrt: ['vector'],
  exp: ['vector'],
  ln: ['vector'],
  log2: ['vector'],
  log10: ['vector'],
  sgn: ['vector'],
  clamp_min: ['vector', 'scalar'],
  clamp_max: ['vector', 'scalar'],
  round: ['vector', 'scalar?'],
  timestamp: ['vector'],
  histogram_quantile: ['scalar', 'vector'],
  time: [],
  scalar: ['vector'],
  vector: ['scalar'],
  sort: ['vector'],
  sort_desc: ['vector'],
  label_replace: ['vector', 'string', 'string', 'string', 'string'],
  // label_join takes any number of source labels: checked in call().
  label_join: ['vector', 'string', 'string'],
};

const OPERATORS: Record<string, BinaryOp> = {
  '+': '+',
  '-': '-',
  '*': '*',
  '/': '/',
  '%': '%',
  '^': '^',
  '==': '==',
  '!=': '!=',
  '>': '>',
  '<': '<',
  '>=': '>=',
  '<=': '<=',
  and: 'and',
  or: 'or',
  unless: 'unless',
};

/** Node names that are expressions (the rest are tokens and modifiers). */
const EXPRESSIONS = new Set([
  'AggregateExpr',
  'BinaryExpr',
  'FunctionCall',
  'MatrixSelector',
  'NumberDurationLiteral',
  'OffsetExpr',
  'ParenExpr',
  'StringLiteral',
  'SubqueryExpr',
  'UnaryExpr',
  'VectorSelector',
  'StepInvariantExpr',
]);

function children(node: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  for (let c = node.firstChild; c; c = c.nextSibling) out.push(c);
  return out;
}

/** A number literal: decimal, hexadecimal, Inf, NaN, or (as Prometheus 3 reads them) a duration in seconds. */
function numberOf(text: string): number {
  const lower = text.toLowerCase();
  if (lower === 'inf' || lower === '+inf') return Number.POSITIVE_INFINITY;
  if (lower === '-inf') return Number.NEGATIVE_INFINITY;
  if (lower === 'nan') return Number.NaN;
  const n = /^0x[0-9a-f]+$/i.test(text) ? parseInt(text, 16) : Number(text);
  if (!Number.isNaN(n) && text.trim() !== '') return n;
  const ms = parseDurationMs(text);
  if (ms !== null) return ms / 1000;
  throw badData(`bad number or duration syntax: ${JSON.stringify(text)}`);
}

class Builder {
  private readonly text: string;
  private readonly nextId: () => number;
  constructor(text: string, nextId: () => number) {
    this.text = text;
    this.nextId = nextId;
  }

  private src(n: SyntaxNode): string {
    return this.text.slice(n.from, n.to);
  }

  expr(n: SyntaxNode): Expr {
    switch (n.name) {
      case 'ParenExpr':
        return this.expr(this.only(n));
      case 'NumberDurationLiteral':
        return { kind: 'number', value: numberOf(this.src(n)) };
      case 'StringLiteral':
        throw unsupported('string literals as expressions');
      case 'UnaryExpr':
        return this.unary(n);
      case 'BinaryExpr':
        return this.binary(n);
      case 'FunctionCall':
        return this.call(n);
      case 'AggregateExpr':
        return this.aggregate(n);
      case 'VectorSelector':
        return this.selector(n, 0);
      case 'MatrixSelector':
        return this.matrix(n, 0);
      case 'OffsetExpr':
        return this.offset(n);
      case 'SubqueryExpr':
        throw unsupported('subqueries');
      case 'StepInvariantExpr':
        throw unsupported('the @ modifier');
      default:
        throw unsupported(`${n.name} (${JSON.stringify(this.src(n))})`);
    }
  }

  private only(n: SyntaxNode): SyntaxNode {
    const inner = children(n).filter((c) => EXPRESSIONS.has(c.name));
    if (inner.length !== 1) throw badData(`unexpected ${JSON.stringify(this.src(n))}`);
    return inner[0]!;
  }

  /** offsetMs: an offset that the grammar put after the whole expression, for its rightmost selector. */
  private unary(n: SyntaxNode, offsetMs: number | null = null): Expr {
    const [opNode, operand] = children(n);
    const expr = offsetMs === null ? this.expr(operand!) : this.withOffset(operand!, offsetMs);
    if (typeOf(expr) === 'matrix') throw badData('unary expression only allowed on expressions of type scalar or instant vector, got "range vector"');
    if (this.src(opNode!) === '+') return expr;
    // Folded like Prometheus does for literals, so -1 stays a number.
    if (expr.kind === 'number') return { kind: 'number', value: -expr.value };
    return { kind: 'negate', expr };
  }

  private binary(n: SyntaxNode, offsetMs: number | null = null): Expr {
    const parts = children(n);
    const lhs = this.expr(parts[0]!);
    const rhs = offsetMs === null ? this.expr(parts[parts.length - 1]!) : this.withOffset(parts[parts.length - 1]!, offsetMs);
    const opText = this.src(parts[1]!).toLowerCase();
    if (opText === 'atan2') throw unsupported('the atan2 operator');
    const op = OPERATORS[opText];
    if (!op) throw unsupported(`the operator ${opText}`);
    let bool = false;
    let matching: VectorMatching | null = null;
    for (const m of parts.slice(2, -1)) {
      if (m.name === 'BoolModifier') bool = true;
      else if (m.name === 'MatchingModifierClause') matching = this.matching(m, op);
    }
    const lt = typeOf(lhs);
    const rt = typeOf(rhs);
    if (lt === 'matrix' || rt === 'matrix') throw badData('binary expression must contain only scalar and instant vector types');
    if (isSetOperator(op) && (lt !== 'vector' || rt !== 'vector')) throw badData(`set operator "${op}" not allowed in binary scalar expression`);
    if (isSetOperator(op) && bool) throw badData('bool modifier can only be used on comparison operators');
    if (bool && !isComparison(op)) throw badData('bool modifier can only be used on comparison operators');
    if (isComparison(op) && !bool && lt === 'scalar' && rt === 'scalar') throw badData('comparisons between scalars must use BOOL modifier');
    if (matching && (lt !== 'vector' || rt !== 'vector')) throw badData('vector matching only allowed between instant vectors');
    return { kind: 'binary', op, lhs, rhs, bool, matching };
  }

  private matching(n: SyntaxNode, op: BinaryOp): VectorMatching {
    let on = false;
    let labels: string[] = [];
    let group: { side: 'left' | 'right'; include: string[] } | null = null;
    for (const c of children(n)) {
      if (c.name === 'On') on = true;
      else if (c.name === 'GroupLeft' || c.name === 'GroupRight') {
        if (isSetOperator(op)) throw badData(`no grouping allowed for "${op}" operation`);
        group = { side: c.name === 'GroupLeft' ? 'left' : 'right', include: [] };
      } else if (c.name === 'GroupingLabels') {
        if (group) group.include = this.groupingLabels(c);
        else labels = this.groupingLabels(c);
      }
    }
    if (on && group) {
      for (const l of group.include) if (labels.includes(l)) throw badData(`label "${l}" must not occur in ON and GROUP clause at once`);
    }
    return { on, labels, group };
  }

  private groupingLabels(n: SyntaxNode): string[] {
    return children(n).map((c) => (c.name === 'QuotedLabelName' ? unquote(this.src(c)) : this.src(c)));
  }

  private call(n: SyntaxNode): Expr {
    const [ident, body] = children(n);
    const name = this.src(ident!);
    if (!(RANGE_FUNCTIONS as readonly string[]).includes(name) && !(INSTANT_FUNCTIONS as readonly string[]).includes(name)) {
      throw unsupported(`the function ${name}()`);
    }
    const func = name as FunctionName;
    // A string literal is an argument here, never an expression of its own.
    const args = body
      ? children(body)
          .filter((c) => EXPRESSIONS.has(c.name))
          .map((c): Expr => (c.name === 'StringLiteral' ? { kind: 'string', value: unquote(this.src(c)) } : this.expr(c)))
      : [];
    const signature = func === 'label_join' ? [...SIGNATURES.label_join, ...args.slice(3).map(() => 'string' as const)] : SIGNATURES[func];
    const required = signature.filter((t) => !t.endsWith('?')).length;
    if (args.length < required || args.length > signature.length) {
      throw badData(
        `expected ${required === signature.length ? required : `${required} to ${signature.length}`} argument(s) in call to "${func}", got ${args.length}`,
      );
    }
    args.forEach((arg, i) => {
      const want = signature[i]!.replace('?', '') as ValueType;
      const got = typeOf(arg);
      if (got !== want) throw badData(`expected type ${TYPE_NAMES[want]} in call to function "${func}", got ${TYPE_NAMES[got]}`);
    });
    return { kind: 'call', func, args };
  }

  private aggregate(n: SyntaxNode): Expr {
    let opName = '';
    let grouping: string[] = [];
    let without = false;
    let body: SyntaxNode | null = null;
    for (const c of children(n)) {
      if (c.name === 'AggregateOp') opName = this.src(c);
      else if (c.name === 'AggregateModifier') {
        for (const m of children(c)) {
          if (m.name === 'Without') without = true;
          else if (m.name === 'GroupingLabels') grouping = this.groupingLabels(m);
        }
      } else if (c.name === 'FunctionCallBody') body = c;
    }
    // Refused by its name before its arguments are read (count_values' string is not the news).
    if (!(AGGREGATIONS as readonly string[]).includes(opName)) throw unsupported(`the aggregation ${opName}`);
    const args = body
      ? children(body)
          .filter((a) => EXPRESSIONS.has(a.name))
          .map((a) => this.expr(a))
      : [];
    const op = opName as AggregateOp;
    const wantsParam = op === 'topk' || op === 'bottomk' || op === 'quantile';
    if (args.length !== (wantsParam ? 2 : 1))
      throw badData(`wrong number of arguments for aggregate expression provided, expected ${wantsParam ? 2 : 1}, got ${args.length}`);
    const expr = args[args.length - 1]!;
    const param = wantsParam ? args[0]! : null;
    if (typeOf(expr) !== 'vector') throw badData(`expected type instant vector in aggregation expression, got ${TYPE_NAMES[typeOf(expr)]}`);
    if (param && typeOf(param) !== 'scalar') throw badData(`expected type scalar in aggregation parameter, got ${TYPE_NAMES[typeOf(param)]}`);
    for (const l of grouping) if (!LABEL_NAME_RE.test(l)) throw badData(`invalid label name ${JSON.stringify(l)} in grouping`);
    return { kind: 'aggregate', op, param, expr, grouping, without };
  }

  private selector(n: SyntaxNode, offsetMs: number): VectorSelector {
    const matchers: Matcher[] = [];
    for (const c of children(n)) {
      if (c.name === 'Identifier') matchers.push({ name: '__name__', op: '=', value: this.src(c) });
      else if (c.name === 'LabelMatchers') for (const m of children(c)) matchers.push(this.matcher(m));
    }
    if (matchers.every((m) => matchesEmpty(m))) throw badData('vector selector must contain at least one non-empty matcher');
    return { kind: 'vector', id: this.nextId(), matchers, offsetMs };
  }

  private matcher(n: SyntaxNode): Matcher {
    const parts = children(n);
    if (n.name === 'QuotedLabelName') return { name: '__name__', op: '=', value: unquote(this.src(n)) };
    const [nameNode, opNode, valueNode] = parts;
    if (!nameNode || !opNode || !valueNode) throw badData(`unexpected ${JSON.stringify(this.src(n))} in label matching`);
    const name = nameNode.name === 'QuotedLabelName' ? unquote(this.src(nameNode)) : this.src(nameNode);
    const op = this.src(opNode) as MatchOp;
    const value = unquote(this.src(valueNode));
    if (op === '=~' || op === '!~') compileRegex(value);
    return { name, op, value };
  }

  private matrix(n: SyntaxNode, offsetMs: number): Expr {
    const [sel, range] = children(n);
    if (!sel || sel.name !== 'VectorSelector') throw badData('ranges only allowed for vector selectors');
    const rangeMs = this.duration(range!);
    if (rangeMs <= 0) throw badData(`range must be positive: ${this.src(range!)}`);
    return { kind: 'matrix', selector: this.selector(sel, offsetMs), rangeMs };
  }

  private offset(n: SyntaxNode): Expr {
    const parts = children(n);
    return this.withOffset(parts[0]!, this.duration(parts[parts.length - 1]!));
  }

  /**
   * The expression with the offset on its selector. The lezer grammar gives `offset` a lower
   * precedence than Prometheus' parser does: `a - b offset 5m` comes as (a - b) offset 5m, which
   * Prometheus reads as a - (b offset 5m). So the offset goes down to the rightmost operand.
   */
  private withOffset(target: SyntaxNode, offsetMs: number): Expr {
    switch (target.name) {
      case 'VectorSelector':
        return this.selector(target, offsetMs);
      case 'MatrixSelector':
        return this.matrix(target, offsetMs);
      case 'BinaryExpr':
        return this.binary(target, offsetMs);
      case 'UnaryExpr':
        return this.unary(target, offsetMs);
      case 'SubqueryExpr':
        throw unsupported('subqueries');
      default:
        throw badData('offset modifier must be preceded by an instant vector selector or range vector selector');
    }
  }

  /** A duration of a range or an offset, in milliseconds; negative offsets allowed. */
  private duration(n: SyntaxNode): number {
    const parts = children(n);
    if (parts.length === 2 && parts[0]!.name === 'UnaryOp') {
      const inner = this.duration(parts[1]!);
      return this.src(parts[0]!) === '-' ? -inner : inner;
    }
    if (parts.length === 1 && parts[0]!.name === 'NumberDurationLiteralInDurationContext') return this.durationLiteral(parts[0]!);
    if (n.name === 'NumberDurationLiteralInDurationContext') return this.durationLiteral(n);
    throw unsupported(`duration expressions (${JSON.stringify(this.src(n))})`);
  }

  /** A range or offset in ms; at most about 125,000 years, so times derived from it stay exact integers. */
  private durationLiteral(n: SyntaxNode): number {
    const text = this.src(n);
    const seconds = Number(text);
    const ms = parseDurationMs(text) ?? (Number.isFinite(seconds) ? Math.round(seconds * 1000) : null);
    if (ms !== null && Math.abs(ms) <= 4e15) return ms;
    throw badData(`bad duration syntax: ${JSON.stringify(text)}`);
  }
}

/** Whether a matcher matches a series without the label (the empty value). */
export function matchesEmpty(m: Matcher): boolean {
  return matcherTest(m)('');
}

/**
 * Prometheus anchors regular expressions at both ends and compiles them with Go's regexp, which
 * is RE2: the same syntax here (re2js, RE2's port), and matching in time linear in the input, so
 * no pattern can make a label match backtrack for ever (a JavaScript RegExp could).
 */
export function compileRegex(source: string): { test(value: string): boolean } {
  try {
    const re = RE2JS.compile(`^(?:${source})$`);
    return { test: (value) => re.matches(value) };
  } catch (cause) {
    throw badData(`invalid regular expression ${JSON.stringify(source)}: ${(cause as Error).message}`);
  }
}

/** A matcher as a test of a label's value ('' when the series does not have the label). */
export function matcherTest(m: Matcher): (value: string) => boolean {
  switch (m.op) {
    case '=':
      return (v) => v === m.value;
    case '!=':
      return (v) => v !== m.value;
    case '=~': {
      const re = compileRegex(m.value);
      return (v) => re.test(v);
    }
    case '!~': {
      const re = compileRegex(m.value);
      return (v) => !re.test(v);
    }
    default: {
      const never: never = m.op;
      return never;
    }
  }
}

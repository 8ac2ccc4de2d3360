// The console's PromQL box: the expression goes to this origin's Prometheus API
// (/prometheus/api/v1/query_range for the graph, /query for the table) with the console's key.
// Every series of the answer is one line of one chart, named canonically (name{label="v",...}).
// Plain DOM, as console.js; texts from the api are shown with textContent only.
import uPlot from '/console/uPlot.esm.js';

const PROMETHEUS = '/prometheus/api/v1';
const HEIGHT = 320;
const AXIS_FONT = '12px system-ui, sans-serif';
const COLOURS = ['#0b5cd5', '#d55e00', '#009e73', '#cc79a7', '#e69f00', '#56b4e9', '#7a5195', '#3d3d3d'];
const RANGES_S = { '1h': 3600, '6h': 6 * 3600, '24h': 86_400, '7d': 7 * 86_400 };
// Round steps, as Grafana picks them: the smallest that keeps the points under the chart's width.
const STEPS_S = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400];
// Prometheus refuses a range query of more than 11,000 points per series; stay well under it.
const MAX_POINTS = 10_000;

const $ = (id) => document.getElementById(id);
let chart = null;
let running = null;

/** One colour per series: the console's palette first, then hues a golden angle apart. */
export function colour(k) {
  return k < COLOURS.length ? COLOURS[k] : `hsl(${Math.round((k * 137.508) % 360)} 65% 42%)`;
}

/**
 * A label set as Meridian names series (points/series-name.ts): name{label="value",...}, the
 * labels sorted, values escaped as the exposition format escapes them; the name alone without
 * labels; {…} alone for a result without a name (an aggregation, a rate).
 */
export function seriesName(metric) {
  const { __name__: name = '', ...labels } = metric;
  const escape = (v) => v.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
  const pairs = Object.keys(labels)
    .sort()
    .map((k) => `${k}="${escape(labels[k])}"`);
  return pairs.length === 0 && name ? name : `${name}{${pairs.join(',')}}`;
}

/** A sample's value as Prometheus writes it ("NaN", "+Inf", "-Inf" included). */
function sampleValue(text) {
  if (text === '+Inf' || text === 'Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}

/** A step for a range of `rangeS` seconds on a chart `width` pixels wide. */
export function autoStep(rangeS, width) {
  const wanted = rangeS / Math.max(100, Math.min(width, MAX_POINTS));
  const round = STEPS_S.find((s) => s >= wanted);
  return round ?? Math.ceil(wanted / 86_400) * 86_400;
}

/** Text typed as a time (RFC 3339, a date, or Unix seconds) as Unix seconds; a time without a zone is UTC. */
function parseTime(text, what) {
  const t = text.trim();
  if (/^-?\d+(\.\d+)?$/.test(t)) return Number(t);
  const zoned = /([zZ]|[+-]\d\d:?\d\d)$/.test(t) || /^\d{4}-\d\d-\d\d$/.test(t) ? t : `${t}Z`;
  const ms = Date.parse(zoned.replace(' ', 'T'));
  if (Number.isNaN(ms)) throw new Error(`${what}: "${t}" is not a time (RFC 3339 such as 2024-01-01T00:00:00Z, or Unix seconds)`);
  return ms / 1000;
}

/** The duration a step input holds (30s, 5m, 1h, 1d or bare seconds) in seconds. */
function parseStep(text) {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)?$/.exec(text.trim());
  if (!m) throw new Error(`step: "${text.trim()}" is not a duration (such as 15s, 1m or 1h)`);
  const unit = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 }[m[2] ?? 's'];
  return Number(m[1]) * unit;
}

/** The range the picker and the custom inputs say, as Unix seconds. */
function chosenRange() {
  const range = $('query-range').value;
  if (range !== 'custom') {
    const end = Math.floor(Date.now() / 1000);
    return { start: end - RANGES_S[range], end };
  }
  const start = parseTime($('query-from').value, 'From');
  const end = $('query-to').value.trim() ? parseTime($('query-to').value, 'To') : Date.now() / 1000;
  if (!(end > start)) throw new Error('To must be after From');
  return { start, end };
}

/** A request to the Prometheus API: its data, or an Error with Prometheus' error message. */
async function prometheus(path, params, apiKey, signal) {
  const response = await fetch(`${PROMETHEUS}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${apiKey()}`, 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params),
    signal,
  });
  let body = null;
  try {
    body = await response.json();
  } catch {
    /* not JSON: the status line below */
  }
  if (body?.status === 'success') return body.data;
  // Prometheus' envelope ({"errorType","error"}), or the api's own problem+json (401, 429).
  const error = new Error(body?.error ?? body?.detail ?? body?.title ?? `${response.status} ${response.statusText}`);
  error.status = response.status;
  error.errorType = body?.errorType;
  throw error;
}

/** A matrix on one time axis: uPlot wants one x array, each series null where it has no value. */
function align(result) {
  const xs = [...new Set(result.flatMap((s) => s.values.map(([t]) => t)))].sort((a, b) => a - b);
  const at = new Map(xs.map((x, i) => [x, i]));
  const ys = result.map((s) => {
    const out = new Array(xs.length).fill(null);
    for (const [t, v] of s.values) {
      const n = sampleValue(v);
      out[at.get(t)] = Number.isFinite(n) ? n : null;
    }
    return out;
  });
  return { xs, ys };
}

const plain = new Intl.NumberFormat('en', { maximumFractionDigits: 6 });
const compact = new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 2 });
const number = (v) => (v === null || v === undefined || Number.isNaN(v) ? '' : Math.abs(v) >= 10_000 ? compact.format(v) : plain.format(v));
const iso = (s) => new Date(Math.round(s * 1000)).toISOString().replace('.000Z', 'Z');

function clear() {
  chart?.destroy();
  chart = null;
  $('query-chart').replaceChildren();
  $('query-chart').dataset.series = '0';
  $('query-rows').replaceChildren();
  $('query-table').hidden = true;
}

/** The matrix as lines of one chart across the whole range asked for, not only where there are points. */
function drawGraph(result, start, end) {
  const el = $('query-chart');
  const { xs, ys } = align(result);
  const names = result.map((s) => seriesName(s.metric));
  el.dataset.series = String(result.length);
  chart = new uPlot(
    {
      width: Math.max(300, el.clientWidth || 800),
      height: HEIGHT,
      padding: [12, 40, 0, 0],
      series: [
        { label: 'Time (UTC)', value: (u, v) => (v === null || v === undefined ? '' : iso(v)) },
        ...names.map((label, k) => ({ label, stroke: colour(k), width: 1.5, spanGaps: false, points: { show: xs.length < 120 }, value: (u, v) => number(v) })),
      ],
      axes: [
        {
          font: AXIS_FONT,
          space: 90,
          size: 44,
          values: (u, splits, i, space, incr) => splits.map((s) => (incr >= 86_400 ? iso(s).slice(0, 10) : iso(s).slice(11, incr >= 60 ? 16 : 19))),
        },
        { font: AXIS_FONT, size: 70, values: (u, splits) => splits.map(number) },
      ],
      scales: { x: { time: true, range: () => [start, end] } },
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    },
    [xs, ...ys],
    el,
  );
}

function drawTable(data) {
  const body = $('query-rows');
  const rows = data.resultType === 'vector' ? data.result.map((s) => [seriesName(s.metric), s.value[1]]) : [[data.resultType, data.result[1]]];
  for (const [name, value] of rows) {
    const row = body.insertRow();
    row.insertCell().textContent = name;
    const td = row.insertCell();
    td.textContent = value;
    td.className = 'num';
  }
  $('query-table').hidden = false;
}

/** Runs the box's expression: a range query drawn as a graph, or an instant query at the range's end as a table. */
async function run(apiKey) {
  running?.abort(); // the api stops the superseded query's ClickHouse work when its client goes away
  const mine = (running = new AbortController());
  const query = $('query-expr').value.trim();
  const table = $('query-view-table').checked;
  $('query-error').textContent = '';
  try {
    if (!query) throw new Error('Type a PromQL expression, such as rate(http_requests_total[5m])');
    const { start, end } = chosenRange();
    const stepText = $('query-step').value.trim();
    const step = stepText ? parseStep(stepText) : autoStep(end - start, $('query-chart').clientWidth || 800);
    $('query-status').textContent = 'Running…';
    const began = performance.now();
    const data = table
      ? await prometheus('/query', { query, time: String(end) }, apiKey, mine.signal)
      : await prometheus('/query_range', { query, start: String(start), end: String(end), step: String(step) }, apiKey, mine.signal);
    if (mine !== running) return;
    clear();
    const ms = Math.round(performance.now() - began);
    if (table) {
      drawTable(data);
      $('query-status').textContent = `${data.resultType === 'vector' ? `${data.result.length} series` : `a ${data.resultType}`} at ${iso(end)} (${ms} ms).`;
    } else {
      if (data.result.length > 0) drawGraph(data.result, start, end);
      $('query-status').textContent =
        data.result.length === 0
          ? 'No series: the expression matches nothing you may read in this range.'
          : `${data.result.length} series from ${iso(start)} to ${iso(end)}, step ${step} s (${ms} ms).`;
    }
  } catch (error) {
    if (mine !== running || error.name === 'AbortError') return;
    clear();
    $('query-status').textContent = '';
    $('query-error').textContent = error.message;
  }
}

/** Wires the box; `apiKey` gives the signed-in key. */
export function wireQueryBox(apiKey) {
  const custom = () => {
    const on = $('query-range').value === 'custom';
    $('query-custom').hidden = !on;
  };
  $('query-range').addEventListener('change', custom);
  custom();
  $('query-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void run(apiKey);
  });
  for (const id of ['query-view-graph', 'query-view-table'])
    $(id).addEventListener('change', () => {
      if ($('query-expr').value.trim()) void run(apiKey);
    });
  new ResizeObserver(() => {
    const width = Math.max(300, $('query-chart').clientWidth || 800);
    if (chart && Math.abs(chart.width - width) > 1) chart.setSize({ width, height: HEIGHT });
  }).observe($('query-chart'));
}

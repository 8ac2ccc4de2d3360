// The Meridian console: plain DOM and fetch against this origin's api, with the API key the
// user types held in sessionStorage (never localStorage or a cookie). Every text from the api
// is shown with textContent, never parsed as HTML.
import uPlot from '/console/uPlot.esm.js';
import { wireQueryBox } from '/console/query.js';

const KEY = 'meridian.apiKey';
const TASK_POLL_MS = 1000;
// Steps one chart asks for: about one per pixel of its width, within these bounds (the api's
// own bound, MERIDIAN_MAX_SERIES_POINTS, is 10,000 by default).
const CHART_POINTS = { min: 200, max: 2000 };
// The most rows "Download this view" asks for in one page (the api's default MERIDIAN_MAX_ROWS_CEILING).
const VIEW_DOWNLOAD_MAX_ROWS = 10_000_000;
const CHART_HEIGHT = 320;
const AXIS_FONT = '12px system-ui, sans-serif';
const COLOURS = ['#0b5cd5', '#d55e00', '#009e73', '#cc79a7', '#e69f00', '#56b4e9', '#7a5195', '#3d3d3d'];
const $ = (id) => document.getElementById(id);

let nextAfter = null;
let lastSearch = {};
let chart = null;
let taskTimer = null;
/** The signed-in user: { user_name, is_admin }. */
let me = null;

const apiKey = () => sessionStorage.getItem(KEY);

/** fetch with the key; a problem+json answer becomes an Error carrying its detail. */
async function api(path, init = {}) {
  const response = await fetch(path, { ...init, headers: { ...init.headers, Authorization: `Bearer ${apiKey()}` } });
  if (!response.ok) {
    let detail = `${response.status} ${response.statusText}`;
    try {
      const problem = await response.json();
      detail = problem.detail ?? problem.title ?? detail;
    } catch {
      /* not JSON: keep the status line */
    }
    const error = new Error(detail);
    error.status = response.status;
    throw error;
  }
  return response;
}

function cell(row, text, className) {
  const td = row.insertCell();
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function button(text, onClick, className) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = text;
  if (className) b.className = className;
  b.addEventListener('click', onClick);
  return b;
}

/** Shows an error where it belongs, in the error colour; cleared by the user's next action. */
function showError(id, error) {
  $(id).textContent = typeof error === 'string' ? error : error.message;
}

/** Every error on the page goes away when the user does something new. */
function clearErrors() {
  for (const el of document.querySelectorAll('p.error')) el.textContent = '';
}

// ---- formats -------------------------------------------------------------------------------

/** Epoch ms as ISO 8601 in UTC, 24-hour, without the milliseconds when they are zero. */
function iso(ms) {
  const text = new Date(ms).toISOString();
  return text.endsWith('.000Z') ? `${text.slice(0, 19)}Z` : text;
}

const plain = new Intl.NumberFormat('en', { maximumFractionDigits: 6 });
const compact = new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 2 });
/** A value for an axis or a table: large ones compact (12.5K, 3.2M), the rest in full. */
function number(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return '';
  return Math.abs(v) >= 10_000 ? compact.format(v) : plain.format(v);
}

function bytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = -1;
  do {
    v /= 1024;
    u++;
  } while (v >= 1024 && u < units.length - 1);
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

function duration(ms) {
  const units = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['min', 60_000],
    ['s', 1000],
    ['ms', 1],
  ];
  for (const [name, size] of units) if (ms >= size && ms % size === 0) return `${ms / size} ${name}`;
  return `${ms} ms`;
}

/**
 * Time axis labels, UTC and 24-hour: the date for steps of a day or more; otherwise the time,
 * with the date under the first label and under each one where the day changes.
 */
function timeLabels(splits, incrSeconds) {
  let lastDay = null;
  return splits.map((s) => {
    if (s === null || s === undefined) return '';
    const text = new Date(s * 1000).toISOString();
    const day = text.slice(0, 10);
    if (incrSeconds >= 86_400) return day;
    const time = incrSeconds >= 60 ? text.slice(11, 16) : incrSeconds >= 1 ? text.slice(11, 19) : text.slice(11, 23);
    const label = day !== lastDay ? `${time}\n${day}` : time;
    lastDay = day;
    return label;
  });
}

// ---- sign in -------------------------------------------------------------------------------

/** Who the key belongs to: the user whose keys hold its id (an admin's list holds every user). */
async function whoAmI(key) {
  const keyId = /^mrd_([0-9a-f]+)_/.exec(key)?.[1];
  const { users } = await (await api('/api/v1/users')).json();
  return users.find((u) => u.api_keys.some((k) => k.key_id === keyId)) ?? (users.length === 1 ? users[0] : null);
}

async function signIn(key) {
  sessionStorage.setItem(KEY, key);
  try {
    me = await whoAmI(key);
  } catch (error) {
    sessionStorage.removeItem(KEY);
    showError('sign-in-error', error.status === 401 ? 'That key was not accepted.' : `Could not sign in: ${error.message}`);
    return;
  }
  $('sign-in-error').textContent = '';
  $('sign-in').hidden = true;
  $('app').hidden = false;
  $('sign-out').hidden = false;
  $('who').hidden = false;
  $('who').textContent = me ? `Signed in as ${me.user_name}${me.is_admin ? ' (admin)' : ''}` : 'Signed in';
  void searchMetrics({});
  refreshFiles().catch((error) => showError('files-error', `Files could not be listed: ${error.message}`));
  void pollTasks();
  const view = viewFromUrl();
  if (view) void drawChart(view, { push: false, scroll: true });
}

function signOut() {
  sessionStorage.removeItem(KEY);
  clearTimeout(taskTimer);
  location.reload();
}

// ---- metrics catalog -----------------------------------------------------------------------

function catalogQuery(search, after) {
  const q = new URLSearchParams({ limit: '100' });
  if (search.text) {
    q.set('pattern', search.pattern);
    q.set('metrics', search.text);
  }
  if (after) q.set('after', after);
  return q;
}

async function searchMetrics(search, more = false) {
  if (!more) {
    lastSearch = search;
    nextAfter = null;
    $('metric-rows').replaceChildren();
  }
  let page;
  try {
    page = await (await api(`/api/v1/metrics?${catalogQuery(lastSearch, more ? nextAfter : null)}`)).json();
  } catch (error) {
    showError('metrics-error', error.status === 404 ? 'No such metric, or not one you may read.' : error.message);
    return;
  }
  for (const m of page.metrics) {
    const row = $('metric-rows').insertRow();
    row.dataset.metric = m.metric_name;
    const name = button(m.metric_name, () => chooseMetric(m, row), 'link');
    row.insertCell().append(name);
    cell(row, m.points.toLocaleString('en'), 'num');
    cell(row, m.first_timestamp);
    cell(row, m.last_timestamp);
  }
  if (page.metrics.length === 0 && !more) showError('metrics-error', 'No metric matches.');
  nextAfter = page.next_after;
  $('metrics-more').hidden = nextAfter === null;
}

function chooseMetric(m, row) {
  for (const r of $('metric-rows').rows) r.classList.toggle('selected', r === row);
  void drawChart({ metrics: m.metric_name, pattern: 'single', from: '', to: '', last: '' }, { scroll: true });
}

// ---- chart: the view and the address bar ---------------------------------------------------

/**
 * A view: metrics and pattern as in a download, and a range: from and to (text the api reads,
 * either may be empty: the data's own first or last point) or last (1h, 24h, 7d, 30d: that long
 * up to the data's last point). It lives in the address bar's hash, so a view can be shared.
 */
const LAST_MS = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 };

function viewFromForm() {
  return {
    metrics: $('chart-metrics').value.trim(),
    pattern: $('chart-pattern').value,
    from: $('chart-from').value.trim(),
    to: $('chart-to').value.trim(),
    last: '',
  };
}

function viewToHash(view) {
  const q = new URLSearchParams({ metrics: view.metrics, pattern: view.pattern });
  if (view.last) q.set('last', view.last);
  else {
    if (view.from) q.set('from', view.from);
    if (view.to) q.set('to', view.to);
  }
  return `#${q}`;
}

function viewFromUrl() {
  const q = new URLSearchParams(location.hash.slice(1));
  if (!q.get('metrics')) return null;
  return { metrics: q.get('metrics'), pattern: q.get('pattern') ?? 'single', from: q.get('from') ?? '', to: q.get('to') ?? '', last: q.get('last') ?? '' };
}

function showView(view) {
  $('chart-metrics').value = view.metrics;
  $('chart-pattern').value = view.pattern;
  $('chart-from').value = view.from;
  $('chart-to').value = view.to;
  for (const b of $('chart-presets').querySelectorAll('button'))
    b.classList.toggle('active', b.dataset.last === (view.last || (!view.from && !view.to ? 'all' : '')));
}

/** The last point of the view's metrics, from the catalog (epoch ms), or null when none matches. */
async function lastPointOf(view) {
  const q = new URLSearchParams({ metrics: view.metrics, pattern: view.pattern, limit: '100' });
  const { metrics } = await (await api(`/api/v1/metrics?${q}`)).json();
  const ends = metrics.map((m) => Date.parse(m.last_timestamp.replace(/\+0000$/, 'Z')));
  return ends.length === 0 ? null : Math.max(...ends);
}

/** The series route's parameters for a view, the relative range resolved. */
async function seriesQuery(view, points) {
  const q = new URLSearchParams({ metrics: view.metrics, pattern: view.pattern, points: String(points) });
  if (view.last && LAST_MS[view.last]) {
    const end = await lastPointOf(view);
    if (end !== null) {
      q.set('start_date', iso(Math.max(0, end - LAST_MS[view.last] + 1)));
      q.set('end_date', iso(end));
    }
  } else if (!view.last) {
    if (view.from) q.set('start_date', view.from);
    if (view.to) q.set('end_date', view.to);
  }
  return q;
}

// ---- chart: drawing --------------------------------------------------------------------------

/** The answer's series on one time axis: uPlot wants one x array, each series null where it has no step. */
function align(answer) {
  const xs = [...new Set(answer.series.flatMap((s) => s.t))].sort((a, b) => a - b);
  const at = new Map(xs.map((x, i) => [x, i]));
  const column = (s, field) => {
    const out = new Array(xs.length).fill(null);
    s.t.forEach((t, i) => {
      out[at.get(t)] = s[field][i];
    });
    return out;
  };
  return {
    xs,
    avg: answer.series.map((s) => column(s, 'avg')),
    min: answer.series.map((s) => column(s, 'min')),
    max: answer.series.map((s) => column(s, 'max')),
  };
}

/** The y-axis as wide as its longest label: a value of 10,000 or more is never cut. */
function axisSize(u, values, axisIdx, cycleNum) {
  const axis = u.axes[axisIdx];
  if (cycleNum > 1) return axis._size;
  let size = axis.ticks.size + axis.gap + 8;
  if (values && values.length > 0) {
    u.ctx.font = axis.font[0];
    const widest = Math.max(...values.map((v) => u.ctx.measureText(String(v)).width));
    size += widest / devicePixelRatio;
  }
  $('chart').dataset.yAxisWidth = String(Math.ceil(size));
  return Math.ceil(size);
}

/** Each visible series' min-to-max band, drawn under the lines. */
function drawBands(u, aligned) {
  const { ctx } = u;
  ctx.save();
  ctx.beginPath();
  ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
  ctx.clip();
  aligned.min.forEach((mins, k) => {
    const s = u.series[k + 1];
    if (!s.show) return;
    const maxs = aligned.max[k];
    ctx.fillStyle = `${COLOURS[k % COLOURS.length]}33`;
    // One polygon per run of steps that hold points.
    let run = [];
    const flush = () => {
      if (run.length === 0) return;
      ctx.beginPath();
      run.forEach((i, j) => {
        const x = Math.round(u.valToPos(aligned.xs[i] / 1000, 'x', true));
        const y = Math.round(u.valToPos(maxs[i], 'y', true));
        if (j === 0) ctx.moveTo(x, y);
        else ctx.lineTo(x, y);
      });
      for (let j = run.length - 1; j >= 0; j--) {
        const i = run[j];
        ctx.lineTo(Math.round(u.valToPos(aligned.xs[i] / 1000, 'x', true)), Math.round(u.valToPos(mins[i], 'y', true)));
      }
      ctx.closePath();
      ctx.fill();
      run = [];
    };
    for (let i = 0; i < aligned.xs.length; i++) {
      if (mins[i] === null) flush();
      else run.push(i);
    }
    flush();
  });
  ctx.restore();
}

function chartWidth() {
  return Math.max(300, $('chart').clientWidth || 800);
}

/** A stretch dragged across the chart: that stretch becomes the view, drawn from the api at full detail. */
function zoomToSelection(u) {
  if (u.select.width < 3) return;
  let from = Math.floor(u.posToVal(u.select.left, 'x') * 1000);
  let to = Math.ceil(u.posToVal(u.select.left + u.select.width, 'x') * 1000);
  // Whole seconds, unless the stretch is shorter than a minute.
  if (to - from >= 60_000) {
    from = Math.floor(from / 1000) * 1000;
    to = Math.ceil(to / 1000) * 1000;
  }
  u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
  clearErrors();
  const view = { ...currentView, from: iso(Math.max(0, from)), to: iso(to), last: '' };
  void drawChart(view, { scroll: false });
}

function render(answer) {
  chart?.destroy();
  chart = null;
  const el = $('chart');
  el.replaceChildren();
  const aligned = align(answer);
  const opts = {
    width: chartWidth(),
    height: CHART_HEIGHT,
    // Room on the right for the last date label.
    padding: [12, 40, 0, 0],
    series: [
      { label: 'Time (UTC)', value: (u, v) => (v === null || v === undefined ? '' : iso(Math.round(v * 1000))) },
      ...answer.series.map((s, k) => ({
        label: s.metric_name,
        stroke: COLOURS[k % COLOURS.length],
        width: 1.5,
        spanGaps: false,
        points: { show: aligned.xs.length < 200 },
        value: (u, v) => number(v),
      })),
    ],
    axes: [
      {
        font: AXIS_FONT,
        space: 90,
        size: 44,
        values: (u, splits, axisIdx, space, incr) => {
          const labels = timeLabels(splits, incr);
          el.dataset.xTicks = JSON.stringify(labels);
          return labels;
        },
      },
      {
        font: AXIS_FONT,
        size: axisSize,
        values: (u, splits) => {
          const labels = splits.map(number);
          el.dataset.yTicks = JSON.stringify(labels);
          return labels;
        },
      },
    ],
    scales: {
      x: { time: true },
      // Room for every visible series' band, not only its averages.
      y: {
        range: (u) => {
          let lo = Infinity;
          let hi = -Infinity;
          aligned.min.forEach((mins, k) => {
            if (!u.series[k + 1].show) return;
            for (const v of mins) if (v !== null && v < lo) lo = v;
            for (const v of aligned.max[k]) if (v !== null && v > hi) hi = v;
          });
          if (lo === Infinity) return [0, 1];
          return uPlot.rangeNum(lo, hi, 0.05, true);
        },
      },
    },
    cursor: { drag: { x: true, y: false, setScale: false } },
    // The axis in UTC, as every timestamp of the api is.
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    hooks: {
      drawAxes: [(u) => drawBands(u, aligned)],
      setSelect: [zoomToSelection],
    },
  };
  chart = new uPlot(opts, [aligned.xs.map((t) => t / 1000), ...aligned.avg], el);
}

/** The table of the charted steps and its "download this view" link. */
function renderTable(view, answer) {
  const rows = answer.series.flatMap((s) => s.t.map((t, i) => [t, s.metric_name, s.min[i], s.max[i], s.avg[i], s.count[i]]));
  rows.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  const body = $('chart-rows');
  body.replaceChildren();
  for (const [t, name, lo, hi, mean, n] of rows) {
    const row = body.insertRow();
    cell(row, iso(t));
    cell(row, name);
    // The table gives values in full; the axis is where they are compact.
    cell(row, plain.format(lo), 'num');
    cell(row, plain.format(hi), 'num');
    cell(row, plain.format(mean), 'num');
    cell(row, n.toLocaleString('en'), 'num');
  }
  const total = answer.series.reduce((sum, s) => sum + s.count.reduce((a, b) => a + b, 0), 0);
  const q = new URLSearchParams({ metrics: view.metrics, pattern: view.pattern });
  if (answer.start) q.set('start_date', answer.start);
  if (answer.end) q.set('end_date', answer.end);
  q.set('file_format', 'csv');
  q.set('max_rows', String(Math.max(1, Math.min(total, VIEW_DOWNLOAD_MAX_ROWS))));
  $('chart-download').href = `/api/v1/metrics/download?${q}`;
  $('chart-download-status').textContent = `${total.toLocaleString('en')} points`;
  // The download builder below takes the same view.
  $('dl-metrics').value = view.metrics;
  $('dl-pattern').value = view.pattern;
  $('dl-from').value = answer.start ?? '';
  $('dl-to').value = answer.end ?? '';
  updateCommands();
}

let currentView = null;
let drawing = 0;

/**
 * Draws a view: its range sampled by the api (GET /api/v1/metrics/series), every series of its
 * pattern on one chart. push: the view goes into the address bar as a new history entry.
 */
async function drawChart(view, { push = true, scroll = false } = {}) {
  if (!view.metrics) return;
  const mine = ++drawing;
  showView(view);
  currentView = view;
  if (push && location.hash !== viewToHash(view)) history.pushState(null, '', viewToHash(view));
  $('chart-status').textContent = 'Loading…';
  if (scroll) $('chart-section').scrollIntoView({ block: 'start' });
  let answer;
  try {
    const points = Math.max(CHART_POINTS.min, Math.min(CHART_POINTS.max, Math.round(chartWidth())));
    const q = await seriesQuery(view, points);
    try {
      answer = await (await api(`/api/v1/metrics/series?${q}`)).json();
    } catch (error) {
      // An api set up for fewer points per series than this chart's width: its own default then.
      if (error.status !== 400 || !/points must be at most/.test(error.message)) throw error;
      q.delete('points');
      answer = await (await api(`/api/v1/metrics/series?${q}`)).json();
    }
  } catch (error) {
    if (mine !== drawing) return;
    $('chart-status').textContent = '';
    showError('chart-error', error.status === 404 ? 'No such metric, or not one you may read.' : error.message);
    return;
  }
  if (mine !== drawing) return; // a newer view was asked for meanwhile
  const total = answer.series.reduce((sum, s) => sum + s.count.reduce((a, b) => a + b, 0), 0);
  if (answer.series.length === 0) {
    chart?.destroy();
    chart = null;
    $('chart').replaceChildren();
    $('chart-status').textContent = 'No metric matches.';
    renderTable(view, answer);
    return;
  }
  const steps = Math.max(...answer.series.map((s) => s.t.length));
  $('chart-status').textContent =
    `${answer.series.length} series from ${answer.start} to ${answer.end}: ${total.toLocaleString('en')} points in steps of ${duration(answer.step_ms)} (${steps.toLocaleString('en')} drawn per series)${answer.rollup ? `, read from the ${answer.rollup} rollups` : ''}.`;
  render(answer);
  renderTable(view, answer);
  if (scroll) $('chart-section').scrollIntoView({ block: 'start' });
}

// Redrawn at the window's width: the steps stay, the canvas follows.
new ResizeObserver(() => {
  if (chart && Math.abs(chart.width - chartWidth()) > 1) chart.setSize({ width: chartWidth(), height: CHART_HEIGHT });
}).observe($('chart'));

// ---- download builder ----------------------------------------------------------------------

function downloadQuery() {
  const q = new URLSearchParams({ metrics: $('dl-metrics').value, pattern: $('dl-pattern').value });
  if ($('dl-from').value) q.set('start_date', $('dl-from').value);
  if ($('dl-to').value) q.set('end_date', $('dl-to').value);
  q.set('file_format', $('dl-format').value);
  if ($('dl-max-rows').value) q.set('max_rows', $('dl-max-rows').value);
  if ($('dl-latest').checked) q.set('latest_only', 'true');
  return q;
}

/** POSIX shell single quoting: any text becomes one word. */
const sh = (text) => `'${text.replaceAll("'", "'\\''")}'`;

function updateCommands() {
  const q = downloadQuery();
  const out = `${($('dl-pattern').value === 'single' ? $('dl-metrics').value : 'metrics').replace(/[^A-Za-z0-9._-]+/g, '_') || 'metrics'}.${$('dl-format').value}`;
  const curl = ['curl', '-fG', sh(`${location.origin}/api/v1/metrics/download`), '-H', '"Authorization: Bearer $MERIDIAN_API_KEY"'];
  for (const [k, v] of q) curl.push('--data-urlencode', sh(`${k}=${v}`));
  curl.push('-o', sh(out));
  const cli = ['meridian', 'download', '--metrics', sh($('dl-metrics').value), '--pattern', $('dl-pattern').value];
  if ($('dl-from').value) cli.push('--from', sh($('dl-from').value));
  if ($('dl-to').value) cli.push('--to', sh($('dl-to').value));
  cli.push('--format', $('dl-format').value);
  if ($('dl-latest').checked) cli.push('--latest-only');
  cli.push('-o', sh(out));
  $('dl-curl').textContent = curl.join(' ');
  $('dl-cli').textContent = `MERIDIAN_URL=${sh(location.origin)} ${cli.join(' ')}`;
}

/** The file name of a Content-Disposition header (filename*= first, then filename=). */
function dispositionName(header, fallback) {
  const star = /filename\*=UTF-8''([^;]+)/i.exec(header ?? '');
  if (star) return decodeURIComponent(star[1]);
  const plainName = /filename="([^"]*)"/i.exec(header ?? '');
  return plainName ? plainName[1] : fallback;
}

/** Saves a response's body as a file the browser downloads. */
async function save(response, fallback) {
  const blob = await response.blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = dispositionName(response.headers.get('Content-Disposition'), fallback);
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return blob.size;
}

async function download() {
  $('dl-status').textContent = 'Downloading…';
  try {
    const response = await api(`/api/v1/metrics/download?${downloadQuery()}`);
    const more = response.headers.has('X-Next-Cursor');
    const size = await save(response, `metrics.${$('dl-format').value}`);
    $('dl-status').textContent =
      `${size.toLocaleString('en')} bytes saved.${more ? ' More rows remain past this page: the CLI command below fetches them all.' : ''}`;
  } catch (error) {
    $('dl-status').textContent = '';
    showError('dl-error', error);
  }
}

/** "Download this view": the link's own address, fetched with the key (a plain link carries none). */
async function downloadView(e) {
  e.preventDefault();
  $('chart-download-status').textContent = 'Downloading…';
  try {
    const response = await api($('chart-download').getAttribute('href'));
    const more = response.headers.has('X-Next-Cursor');
    const size = await save(response, 'metrics.csv');
    $('chart-download-status').textContent =
      `${size.toLocaleString('en')} bytes saved.${more ? ' More rows remain: use the CLI command below for all of them.' : ''}`;
  } catch (error) {
    $('chart-download-status').textContent = '';
    showError('chart-error', error);
  }
}

// ---- tasks ---------------------------------------------------------------------------------

function taskDetail(t) {
  if (t.status === 'failed') return t.reason ?? 'failed';
  if (t.result && 'points_accepted' in t.result) return `${t.result.points_accepted} points, ${t.result.rows_rejected} rows rejected`;
  if (t.result && 'file_id' in t.result) return `file ${t.result.file_id}, ${t.result.size} bytes`;
  return '';
}

/**
 * A task's progress: a file is stored whole (its bar is full once it succeeded, moving while it
 * runs, and says its size); points count rows, against their total once it is known.
 */
function showProgress(td, t) {
  const bar = document.createElement('progress');
  let text;
  const done = t.progress.rows_done;
  const total = t.progress.rows_total;
  if (t.kind === 'file_definition') {
    if (t.status === 'succeeded') {
      bar.max = 1;
      bar.value = 1;
      text = t.result?.size === undefined ? 'stored' : bytes(t.result.size);
    } else text = t.status === 'failed' ? 'not stored' : 'storing';
  } else if (total !== null) {
    bar.max = Math.max(1, total);
    bar.value = t.status === 'succeeded' ? bar.max : Math.min(done, bar.max);
    text = `${done.toLocaleString('en')} / ${total.toLocaleString('en')} rows`;
  } else {
    if (t.status === 'succeeded') {
      bar.max = 1;
      bar.value = 1;
    }
    text = `${done.toLocaleString('en')} rows`;
  }
  // A bar without a value is indeterminate: moving, no amount claimed.
  const parts = t.status === 'failed' ? [text] : [bar, ` ${text}`];
  td.replaceChildren(...parts);
}

async function copyText(text, b) {
  try {
    await navigator.clipboard.writeText(text);
    b.textContent = 'Copied';
  } catch {
    b.textContent = 'Select and copy';
  }
  setTimeout(() => {
    b.textContent = 'Copy';
  }, 1500);
}

/** Rows are kept per task and updated in place: a button under the pointer stays where it is. */
const taskRows = new Map();

function taskRow(t) {
  let row = taskRows.get(t.task_id);
  if (!row) {
    row = document.createElement('tr');
    row.dataset.taskId = t.task_id;
    const id = row.insertCell();
    const code = document.createElement('code');
    code.className = 'task-id';
    code.textContent = t.task_id;
    const copy = button('Copy', () => void copyText(t.task_id, copy), 'copy');
    copy.title = 'Copy the task id (meridian tasks <id>)';
    id.append(code, ' ', copy);
    for (let i = 0; i < 5; i++) row.insertCell();
    taskRows.set(t.task_id, row);
  }
  row.dataset.status = t.status;
  row.cells[1].textContent = t.kind;
  row.cells[2].textContent = t.status;
  row.cells[2].className = `status-${t.status}`;
  showProgress(row.cells[3], t);
  row.cells[4].textContent = t.created_at;
  row.cells[5].textContent = taskDetail(t);
  return row;
}

async function pollTasks() {
  clearTimeout(taskTimer);
  try {
    const { tasks } = await (await api('/api/v1/tasks?limit=20')).json();
    const body = $('task-rows');
    const rows = tasks.map(taskRow);
    const shown = new Set(tasks.map((t) => t.task_id));
    for (const [id, row] of taskRows)
      if (!shown.has(id)) {
        row.remove();
        taskRows.delete(id);
      }
    rows.forEach((row, i) => {
      if (body.rows[i] !== row) body.insertBefore(row, body.rows[i] ?? null);
    });
    if (tasks.some((t) => t.kind === 'file_definition' && t.status === 'succeeded' && !knownFiles.has(t.result?.file_id))) await refreshFiles();
  } catch (error) {
    if (error.status === 401) return signOut();
  }
  taskTimer = setTimeout(pollTasks, TASK_POLL_MS);
}

// ---- files ---------------------------------------------------------------------------------

const knownFiles = new Set();
/** Sizes by file id: a file's bytes never change, so each is looked up once (GET /api/v1/files/{id}). */
const fileSizes = new Map();

async function sizeOf(fileId) {
  if (!fileSizes.has(fileId)) {
    fileSizes.set(
      fileId,
      api(`/api/v1/files/${encodeURIComponent(fileId)}`)
        .then((r) => r.json())
        .then((f) => f.size)
        .catch((error) => {
          fileSizes.delete(fileId);
          throw error;
        }),
    );
  }
  return fileSizes.get(fileId);
}

/** At most `n` of the calls at once (the api's rate limit counts every lookup). */
async function inBatches(items, n, fn) {
  for (let i = 0; i < items.length; i += n) await Promise.all(items.slice(i, i + n).map(fn));
}

function shareForm(f, row) {
  const form = document.createElement('form');
  form.className = 'share-form';
  const user = document.createElement('input');
  user.placeholder = 'user name';
  user.required = true;
  user.setAttribute('aria-label', 'Share with user');
  const access = document.createElement('select');
  access.setAttribute('aria-label', 'Access');
  for (const [value, text] of [
    ['r', 'may read'],
    ['rw', 'may read and edit'],
  ])
    access.add(new Option(text, value));
  const ok = document.createElement('button');
  ok.type = 'submit';
  ok.textContent = 'Share';
  form.append(user, access, ok);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const name = user.value.trim();
    try {
      await api(`/api/v1/files/${encodeURIComponent(f.file_id)}/entitlements/${encodeURIComponent(name)}`, {
        method: 'PUT',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ access: access.value }),
      });
      $('files-status').textContent = `${f.file_name} is shared with ${name} (${access.value}).`;
      form.remove();
    } catch (error) {
      showError('files-error', `Could not share ${f.file_name}: ${error.message}`);
    }
  });
  row.cells[row.cells.length - 1].append(form);
  user.focus();
}

async function deleteFile(f) {
  if (!confirm(`Delete ${f.file_name}? This cannot be undone.`)) return;
  try {
    await api(`/api/v1/files/${encodeURIComponent(f.file_id)}`, { method: 'DELETE' });
    $('files-status').textContent = `${f.file_name} was deleted.`;
    await refreshFiles();
  } catch (error) {
    showError('files-error', `Could not delete ${f.file_name}: ${error.message}`);
  }
}

async function refreshFiles() {
  const { files_list: files } = await (await api('/api/v1/files?limit=100')).json();
  const body = $('file-rows');
  body.replaceChildren();
  knownFiles.clear();
  const sizes = [];
  for (const f of files) {
    knownFiles.add(f.file_id);
    const row = body.insertRow();
    row.dataset.fileId = f.file_id;
    cell(row, f.file_name);
    cell(row, f.user_name);
    cell(row, f.entitlement);
    const size = cell(row, '…', 'num size');
    sizes.push([f.file_id, size]);
    cell(row, f.created_at);
    const actions = row.insertCell();
    actions.className = 'actions';
    actions.append(
      button('Download', async () => {
        try {
          await save(await api(`/api/v1/file/download/${encodeURIComponent(f.file_id)}`), f.file_name);
        } catch (error) {
          showError('files-error', `Could not download ${f.file_name}: ${error.message}`);
        }
      }),
    );
    // Sharing and deleting are the owner's (or an admin's).
    if (me && (me.is_admin || me.user_name === f.user_name)) {
      actions.append(
        ' ',
        button(
          'Share',
          () => {
            if (!row.querySelector('.share-form')) shareForm(f, row);
          },
          'share',
        ),
        ' ',
        button('Delete', () => void deleteFile(f), 'delete'),
      );
    }
  }
  await inBatches(sizes, 4, async ([fileId, td]) => {
    try {
      const n = await sizeOf(fileId);
      td.textContent = bytes(n);
      td.title = `${n.toLocaleString('en')} bytes`;
      td.dataset.bytes = String(n);
    } catch {
      td.textContent = '?';
    }
  });
}

/** One upload with XMLHttpRequest, whose upload events give the bytes sent. */
function upload(file) {
  const points = $('upload-kind').value === 'points';
  const item = document.createElement('li');
  const bar = document.createElement('progress');
  bar.max = file.size || 1;
  bar.value = 0;
  const label = document.createElement('span');
  label.textContent = ` ${file.name}: sending`;
  item.append(bar, label);
  $('uploads').prepend(item);

  const form = new FormData();
  form.append('file', file, file.name);
  const xhr = new XMLHttpRequest();
  const metric = $('upload-metric').value.trim();
  xhr.open('POST', !points ? '/api/v1/files' : `/api/v1/metrics_file_upload${metric ? `?${new URLSearchParams({ metric_name: metric })}` : ''}`);
  xhr.setRequestHeader('Authorization', `Bearer ${apiKey()}`);
  xhr.upload.addEventListener('progress', (e) => {
    if (e.lengthComputable) {
      bar.max = e.total;
      bar.value = e.loaded;
    }
  });
  xhr.addEventListener('load', () => {
    let answer = {};
    try {
      answer = JSON.parse(xhr.responseText);
    } catch {
      /* not JSON */
    }
    if (xhr.status === 202) {
      bar.value = bar.max;
      label.textContent = ` ${file.name}: accepted, task ${answer.task_id}`;
      item.dataset.taskId = answer.task_id;
      void pollTasks();
    } else {
      label.textContent = ` ${file.name}: refused: ${answer.detail ?? xhr.status}`;
      label.className = 'error';
    }
  });
  xhr.addEventListener('error', () => {
    label.textContent = ` ${file.name}: the connection failed`;
    label.className = 'error';
  });
  xhr.send(form);
}

// ---- wiring --------------------------------------------------------------------------------

// Any action (a click on a button or a link, a form sent) starts with a clean slate of errors.
document.addEventListener(
  'click',
  (e) => {
    if (e.target.closest?.('button, a')) clearErrors();
  },
  true,
);
document.addEventListener('submit', clearErrors, true);

$('sign-in-form').addEventListener('submit', (e) => {
  e.preventDefault();
  void signIn($('api-key').value.trim());
  $('api-key').value = '';
});
$('sign-out').addEventListener('click', signOut);
$('search-form').addEventListener('submit', (e) => {
  e.preventDefault();
  void searchMetrics({ pattern: $('search-pattern').value, text: $('search-text').value });
});
$('metrics-more').addEventListener('click', () => void searchMetrics(lastSearch, true));
$('chart-matches').addEventListener('click', () => {
  const text = $('search-text').value;
  const pattern = text ? $('search-pattern').value : 'contains';
  void drawChart({ metrics: text, pattern, from: '', to: '', last: '' }, { scroll: true });
});
$('chart-form').addEventListener('submit', (e) => {
  e.preventDefault();
  void drawChart(viewFromForm(), { scroll: true });
});
for (const b of $('chart-presets').querySelectorAll('button')) {
  b.addEventListener('click', () => {
    const view = viewFromForm();
    if (!view.metrics) return showError('chart-error', 'Name the metrics to chart first.');
    void drawChart({ ...view, from: '', to: '', last: b.dataset.last === 'all' ? '' : b.dataset.last });
  });
}
$('chart-download').addEventListener('click', (e) => void downloadView(e));
window.addEventListener('popstate', () => {
  const view = viewFromUrl();
  if (view && apiKey()) void drawChart(view, { push: false });
});
$('builder-form').addEventListener('input', updateCommands);
$('builder-form').addEventListener('submit', (e) => {
  e.preventDefault();
  void download();
});
$('file-input').addEventListener('change', () => {
  for (const f of $('file-input').files) upload(f);
  $('file-input').value = '';
});
const zone = $('drop-zone');
zone.addEventListener('dragover', (e) => {
  e.preventDefault();
  zone.classList.add('over');
});
zone.addEventListener('dragleave', () => zone.classList.remove('over'));
zone.addEventListener('drop', (e) => {
  e.preventDefault();
  zone.classList.remove('over');
  for (const f of e.dataTransfer.files) upload(f);
});

wireQueryBox(apiKey);

updateCommands();
if (apiKey()) void signIn(apiKey());

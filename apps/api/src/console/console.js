// The Meridian console: plain DOM and fetch against this origin's api, with the API key the
// user types held in sessionStorage (never localStorage or a cookie). Every text from the api
// is shown with textContent, never parsed as HTML.
import uPlot from '/console/uPlot.esm.js';

const KEY = 'meridian.apiKey';
const TASK_POLL_MS = 1000;
// The most points one chart asks for: what a browser tab holds and draws without stalling.
const CHART_MAX_POINTS = 100000;
const $ = (id) => document.getElementById(id);

let nextAfter = null;
let lastSearch = {};
let chart = null;
let taskTimer = null;

const apiKey = () => sessionStorage.getItem(KEY);

/** fetch with the key; a problem+json answer becomes an Error carrying its detail. */
async function api(path, init = {}) {
  const response = await fetch(path, { ...init, headers: { ...init.headers, Authorization: `Bearer ${apiKey()}` } });
  if (!response.ok) {
    let detail = `${response.status} ${response.statusText}`;
    try {
      const problem = await response.json();
      detail = problem.detail ?? problem.title ?? detail;
    } catch { /* not JSON: keep the status line */ }
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

// ---- sign in -------------------------------------------------------------------------------

async function signIn(key) {
  sessionStorage.setItem(KEY, key);
  try {
    await api('/api/v1/metrics?limit=1');
  } catch (error) {
    sessionStorage.removeItem(KEY);
    $('sign-in-error').textContent = error.status === 401 ? 'That key was not accepted.' : `Could not sign in: ${error.message}`;
    return;
  }
  $('sign-in-error').textContent = '';
  $('sign-in').hidden = true;
  $('app').hidden = false;
  $('sign-out').hidden = false;
  void searchMetrics({});
  refreshFiles().catch((error) => { $('uploads').textContent = `Files could not be listed: ${error.message}`; });
  void pollTasks();
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
  $('metrics-error').textContent = '';
  if (!more) {
    lastSearch = search;
    nextAfter = null;
    $('metric-rows').replaceChildren();
  }
  let page;
  try {
    page = await (await api(`/api/v1/metrics?${catalogQuery(lastSearch, more ? nextAfter : null)}`)).json();
  } catch (error) {
    $('metrics-error').textContent = error.status === 404 ? 'No such metric, or not one you may read.' : error.message;
    return;
  }
  for (const m of page.metrics) {
    const row = $('metric-rows').insertRow();
    row.dataset.metric = m.metric_name;
    const name = document.createElement('button');
    name.type = 'button';
    name.className = 'link';
    name.textContent = m.metric_name;
    name.addEventListener('click', () => chooseMetric(m, row));
    row.insertCell().append(name);
    cell(row, m.points.toLocaleString('en'), 'num');
    cell(row, m.first_timestamp);
    cell(row, m.last_timestamp);
  }
  if (page.metrics.length === 0 && !more) $('metrics-error').textContent = 'No metric matches.';
  nextAfter = page.next_after;
  $('metrics-more').hidden = nextAfter === null;
}

function chooseMetric(m, row) {
  for (const r of $('metric-rows').rows) r.classList.toggle('selected', r === row);
  $('chart-metric').textContent = m.metric_name;
  $('chart-from').value = m.first_timestamp;
  $('chart-to').value = m.last_timestamp;
  $('dl-metrics').value = m.metric_name;
  $('dl-pattern').value = 'single';
  $('dl-from').value = m.first_timestamp;
  $('dl-to').value = m.last_timestamp;
  updateCommands();
  void drawChart();
}

// ---- chart ---------------------------------------------------------------------------------

/** The download's timestamps (YYYY-MM-DDTHH:MM:SS[.sss]+0000) as epoch seconds for uPlot. */
const seconds = (ts) => Date.parse(ts.replace(/\+0000$/, 'Z')) / 1000;

async function drawChart() {
  const metric = $('chart-metric').textContent;
  if (!metric) return;
  const q = new URLSearchParams({ metrics: metric, pattern: 'single', format: 'json', max_rows: String(Math.min(CHART_MAX_POINTS, Math.max(1, Number($('chart-max').value) || 10000))) });
  if ($('chart-from').value) q.set('start_date', $('chart-from').value);
  if ($('chart-to').value) q.set('end_date', $('chart-to').value);
  $('chart-status').textContent = 'Loading…';
  let rows;
  let cut;
  try {
    const response = await api(`/api/v1/metrics/download?${q}`);
    cut = response.headers.has('X-Next-Cursor');
    rows = await response.json();
  } catch (error) {
    $('chart-status').textContent = error.message;
    return;
  }
  const xs = rows.map((r) => seconds(r.timestamp));
  const ys = rows.map((r) => r.metric_numeric_value);
  $('chart-status').textContent = `${rows.length.toLocaleString('en')} points${cut ? ' (the first ones only: raise the limit or narrow the range)' : ''}.`;
  chart?.destroy();
  const width = Math.max(300, $('chart').clientWidth || 800);
  chart = new uPlot({
    width,
    height: 300,
    series: [{}, { label: metric, stroke: '#0b5cd5', width: 1.5, points: { show: rows.length < 200 } }],
    axes: [{}, {}],
    // The axis in UTC, as every timestamp of the api is.
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
  }, [xs, ys], $('chart'));
}

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
  const plain = /filename="([^"]*)"/i.exec(header ?? '');
  return plain ? plain[1] : fallback;
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
    const bytes = await save(response, `metrics.${$('dl-format').value}`);
    $('dl-status').textContent = `${bytes.toLocaleString('en')} bytes saved.${more ? ' More rows remain past this page: the CLI command below fetches them all.' : ''}`;
  } catch (error) {
    $('dl-status').textContent = error.message;
  }
}

// ---- tasks ---------------------------------------------------------------------------------

function taskDetail(t) {
  if (t.status === 'failed') return t.reason ?? 'failed';
  if (t.result && 'points_accepted' in t.result) return `${t.result.points_accepted} points, ${t.result.rows_rejected} rows rejected`;
  if (t.result && 'file_id' in t.result) return `file ${t.result.file_id}, ${t.result.size} bytes`;
  return '';
}

async function pollTasks() {
  clearTimeout(taskTimer);
  try {
    const { tasks } = await (await api('/api/v1/tasks?limit=20')).json();
    const body = $('task-rows');
    body.replaceChildren();
    for (const t of tasks) {
      const row = body.insertRow();
      row.dataset.taskId = t.task_id;
      row.dataset.status = t.status;
      cell(row, t.task_id.slice(0, 8));
      cell(row, t.kind);
      cell(row, t.status, `status-${t.status}`);
      const bar = document.createElement('progress');
      bar.max = t.progress.rows_total ?? 1;
      bar.value = t.status === 'succeeded' ? bar.max : Math.min(t.progress.rows_done, bar.max);
      const td = row.insertCell();
      td.append(bar, ` ${t.progress.rows_done.toLocaleString('en')}${t.progress.rows_total === null ? '' : ` / ${t.progress.rows_total.toLocaleString('en')}`}`);
      cell(row, t.created_at);
      cell(row, taskDetail(t));
    }
    if (tasks.some((t) => t.kind === 'file_definition' && t.status === 'succeeded' && !knownFiles.has(t.result?.file_id))) await refreshFiles();
  } catch (error) {
    if (error.status === 401) return signOut();
  }
  taskTimer = setTimeout(pollTasks, TASK_POLL_MS);
}

// ---- files ---------------------------------------------------------------------------------

const knownFiles = new Set();

async function refreshFiles() {
  const { files_list: files } = await (await api('/api/v1/files?limit=100')).json();
  const body = $('file-rows');
  body.replaceChildren();
  knownFiles.clear();
  for (const f of files) {
    knownFiles.add(f.file_id);
    const row = body.insertRow();
    row.dataset.fileId = f.file_id;
    cell(row, f.file_name);
    cell(row, f.user_name);
    cell(row, f.entitlement);
    cell(row, f.created_at);
    const get = document.createElement('button');
    get.type = 'button';
    get.textContent = 'Download';
    get.addEventListener('click', async () => save(await api(`/api/v1/file/download/${encodeURIComponent(f.file_id)}`), f.file_name));
    row.insertCell().append(get);
  }
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
    try { answer = JSON.parse(xhr.responseText); } catch { /* not JSON */ }
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
$('chart-form').addEventListener('submit', (e) => {
  e.preventDefault();
  void drawChart();
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

updateCommands();
if (apiKey()) void signIn(apiKey());

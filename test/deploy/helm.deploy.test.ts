import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { settingDefinitions } from '@meridian/config';
import { API_NODE_FLAGS } from '../../apps/api/src/node-flags.ts';
import { INGEST_NODE_FLAGS } from '../../apps/ingest/src/node-flags.ts';

/**
 * The Helm chart (deploy/helm/meridian), rendered with `helm template` for its default values
 * and for each documented example (deploy/helm/examples), every manifest validated offline and
 * strictly (no unknown field) against the Kubernetes schemas that kubernetes-validate ships, at
 * the chart's kubeVersion floor and at a current release. helm (Go module proxy) and
 * kubernetes-validate (PyPI) are installed into the cache by deploy/local/install.sh test-tools.
 */
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const chart = join(repoRoot, 'deploy/helm/meridian');
const examplesDir = join(repoRoot, 'deploy/helm/examples');
const examples = readdirSync(examplesDir)
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => join(examplesDir, f));
/** The chart's kubeVersion floor (Chart.yaml) and a current release. */
const KUBERNETES_VERSIONS = ['1.29.0', '1.33.0'];

const tools = spawnSync('bash', ['-c', 'source deploy/local/lib.sh && printf "%s\\n%s" "$HELM_BIN" "$KUBERNETES_VALIDATE_HOME"'], {
  cwd: repoRoot,
  encoding: 'utf8',
}).stdout.split('\n');
const helm = tools[0]!;
const kubernetesValidate = `${tools[1]!}/bin/kubernetes-validate`;

/** Settings the chart keeps in a Secret: every setting whose name says it is a credential. */
const SECRET_SETTINGS = ['CLICKHOUSE_PASSWORD', 'MERIDIAN_CURSOR_SECRET', 'S3_ACCESS_KEY', 'S3_SECRET_KEY'];
/** Read by the user CLI only, never by api or ingest. */
const isCliOnly = (name: string) => name.startsWith('MERIDIAN_CLI_');

type Manifest = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> }; [key: string]: unknown };
type Container = {
  name: string;
  command: string[];
  envFrom: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name: string; containerPort: number }[];
  livenessProbe?: { httpGet: { path: string; port: string } };
  readinessProbe?: { httpGet: { path: string; port: string } };
  securityContext: Record<string, unknown> & { capabilities: { drop: string[] } };
};
type PodSpec = { automountServiceAccountToken: boolean; enableServiceLinks: boolean; securityContext: Record<string, unknown>; containers: Container[] };
type Deployment = Manifest & {
  spec: { replicas?: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } };
};

let work: string;
beforeAll(() => {
  for (const [tool, step] of [
    [helm, 'helm'],
    [kubernetesValidate, 'kubernetes-validate'],
  ] as const) {
    if (!existsSync(tool)) throw new Error(`${tool} is missing: run deploy/local/install.sh ${step} (make test does)`);
  }
  work = mkdtempSync(join(tmpdir(), 'meridian-helm-'));
});
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

function run(command: string, args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(command, args, { cwd: work, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: work } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** `helm template` with these values files and --set pairs; its output (it must succeed) and the manifests in it. */
function render(valuesFiles: readonly string[] = [], sets: readonly string[] = []): { yaml: string; manifests: Manifest[] } {
  const r = run(helm, [
    'template',
    'rel',
    chart,
    '--namespace',
    'meridian',
    '--kube-version',
    KUBERNETES_VERSIONS.at(-1)!,
    ...valuesFiles.flatMap((f) => ['-f', f]),
    ...sets.flatMap((s) => ['--set', s]),
  ]);
  expect(r.err, 'helm template wrote errors').toBe('');
  expect(r.code).toBe(0);
  const manifests = parseAllDocuments(r.out)
    .map((d) => d.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
  return { yaml: r.out, manifests };
}

/** `helm template` that must fail; its error. */
function renderError(sets: readonly string[]): string {
  const r = run(helm, ['template', 'rel', chart, '--kube-version', KUBERNETES_VERSIONS.at(-1)!, ...sets.flatMap((s) => ['--set', s])]);
  expect(r.code).not.toBe(0);
  return r.err;
}

const find = <T extends Manifest = Manifest>(manifests: Manifest[], kind: string, name: string): T => {
  const found = manifests.find((m) => m.kind === kind && m.metadata.name === name);
  expect(found, `${kind} ${name}`).toBeDefined();
  return found as T;
};
const configMapData = (manifests: Manifest[]) => find<Manifest & { data: Record<string, string> }>(manifests, 'ConfigMap', 'rel-meridian-settings').data;

/** The values the chart is rendered with: its defaults and each example (a label and the values files). */
const valueSets: [string, string[]][] = [
  ['default values', []],
  ...examples.map((f): [string, string[]] => [`example ${f.slice(examplesDir.length + 1)}`, [f]]),
];

describe('the Helm chart', () => {
  it('has a documented example for the Strimzi Kafka operator and one for the Altinity ClickHouse operator', () => {
    expect(examples.map((f) => f.slice(examplesDir.length + 1)).sort()).toEqual(['altinity-clickhouse.yaml', 'strimzi-kafka.yaml']);
  });

  it.each(valueSets)('passes helm lint --strict with %s', (_, files) => {
    const r = run(helm, ['lint', chart, '--strict', '--kube-version', KUBERNETES_VERSIONS.at(-1)!, ...files.flatMap((f) => ['-f', f])]);
    expect(r.out + r.err).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    expect(r.code).toBe(0);
  });

  it.each([
    ...valueSets.map(([label, files]): [string, string[], string[]] => [label, files, []]),
    ['an admin port', [], ['settings.MERIDIAN_ADMIN_PORT=9464']],
  ] as [string, string[], string[]][])('renders with %s into manifests that validate strictly against the Kubernetes schemas', (label, files, sets) => {
    const { yaml, manifests } = render(files, sets);
    expect(manifests.map((m) => m.kind)).toEqual(
      expect.arrayContaining(['ConfigMap', 'Deployment', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'Service']),
    );
    const file = join(work, `${label.replace(/\W+/g, '-')}.yaml`);
    writeFileSync(file, yaml);
    for (const version of KUBERNETES_VERSIONS) {
      const r = run(kubernetesValidate, ['--strict', '--kubernetes-version', version, file]);
      expect(r.out + r.err, `kubernetes-validate ${version}`).not.toMatch(/ERROR|WARN/);
      // One "passed" line per manifest: none was skipped for want of a schema.
      expect((r.out + r.err).match(/ passed for resource /g), `kubernetes-validate ${version}`).toHaveLength(manifests.length);
      expect(r.code).toBe(0);
    }
  });

  it('probes the api on /healthz (liveness) and /readyz (readiness), and starts it with API_NODE_FLAGS', () => {
    const api = find<Deployment>(render().manifests, 'Deployment', 'rel-meridian-api').spec.template.spec.containers[0]!;
    expect(api.livenessProbe!.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(api.readinessProbe!.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(api.ports).toContainEqual({ name: 'http', containerPort: 8088, protocol: 'TCP' });
    expect(api.command).toEqual(['node', ...API_NODE_FLAGS, 'apps/api/src/main.ts']);
  });

  it("runs the ingest worker from its entry point with INGEST_NODE_FLAGS, probed on its probe listener's /healthz and /readyz", () => {
    const ingest = find<Deployment>(render().manifests, 'Deployment', 'rel-meridian-ingest').spec.template.spec.containers[0]!;
    expect(ingest.command).toEqual(['node', ...INGEST_NODE_FLAGS, 'apps/ingest/src/main.ts']);
    expect(existsSync(join(repoRoot, 'apps/ingest/src/main.ts'))).toBe(true);
    expect(ingest.ports).toEqual([{ name: 'health', containerPort: 8089, protocol: 'TCP' }]);
    expect(ingest.livenessProbe!.httpGet).toEqual({ path: '/healthz', port: 'health' });
    expect(ingest.readinessProbe!.httpGet).toEqual({ path: '/readyz', port: 'health' });
    const { manifests } = render([], ['settings.MERIDIAN_INGEST_HEALTH_PORT=9100']);
    expect(find<Deployment>(manifests, 'Deployment', 'rel-meridian-ingest').spec.template.spec.containers[0]!.ports).toEqual([
      { name: 'health', containerPort: 9100, protocol: 'TCP' },
    ]);
    expect(renderError(['settings.MERIDIAN_INGEST_HEALTH_PORT='])).toMatch(/MERIDIAN_INGEST_HEALTH_PORT is empty/);
  });

  it('puts the admin listener behind a Service of its own, only when MERIDIAN_ADMIN_PORT is set', () => {
    expect(
      render()
        .manifests.filter((m) => m.kind === 'Service')
        .map((m) => m.metadata.name),
    ).toEqual(['rel-meridian-api']);
    const { manifests } = render([], ['settings.MERIDIAN_ADMIN_PORT=9464']);
    const admin = find<Manifest & { spec: { ports: unknown[] } }>(manifests, 'Service', 'rel-meridian-api-admin');
    expect(admin.spec.ports).toEqual([{ name: 'admin', port: 9464, targetPort: 'admin', protocol: 'TCP' }]);
    const api = find<Deployment>(manifests, 'Deployment', 'rel-meridian-api').spec.template.spec.containers[0]!;
    expect(api.ports).toContainEqual({ name: 'admin', containerPort: 9464, protocol: 'TCP' });
    expect(find<Manifest & { spec: { ports: unknown[] } }>(manifests, 'Service', 'rel-meridian-api')).toMatchObject({ spec: { ports: [{ name: 'http' }] } });
  });

  it.each(valueSets)('gives api and ingest each a PodDisruptionBudget that selects their pods (%s)', (_, files) => {
    const { manifests } = render(files);
    for (const component of ['api', 'ingest']) {
      const pdb = find<Manifest & { spec: { maxUnavailable?: number; minAvailable?: number; selector: { matchLabels: Record<string, string> } } }>(
        manifests,
        'PodDisruptionBudget',
        `rel-meridian-${component}`,
      );
      const pods = find<Deployment>(manifests, 'Deployment', `rel-meridian-${component}`).spec.template.metadata.labels;
      expect(pods).toMatchObject(pdb.spec.selector.matchLabels);
      expect(pdb.spec.selector.matchLabels['app.kubernetes.io/component']).toBe(component);
      expect(pdb.spec.maxUnavailable ?? pdb.spec.minAvailable).toBeDefined();
    }
  });

  it.each(valueSets)('scales ingest with an autoscaler whose maxReplicas is at most the tasks or points partitions (%s)', (_, files) => {
    const { manifests } = render(files);
    const hpa = find<Manifest & { spec: { scaleTargetRef: { kind: string; name: string }; minReplicas: number; maxReplicas: number } }>(
      manifests,
      'HorizontalPodAutoscaler',
      'rel-meridian-ingest',
    );
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: 'rel-meridian-ingest' });
    const data = configMapData(manifests);
    const partitions = Math.max(Number(data.KAFKA_TASKS_PARTITIONS), Number(data.KAFKA_POINTS_PARTITIONS));
    expect(hpa.spec.maxReplicas).toBeLessThanOrEqual(partitions);
    expect(hpa.spec.minReplicas).toBeLessThanOrEqual(hpa.spec.maxReplicas);
    // The autoscaler owns the replica count.
    expect(find<Deployment>(manifests, 'Deployment', 'rel-meridian-ingest').spec.replicas).toBeUndefined();
  });

  it('refuses to render an ingest maxReplicas (or fixed replicas) above the partitions, and follows the partitions set', () => {
    expect(renderError(['ingest.autoscaling.maxReplicas=4'])).toMatch(
      /ingest\.autoscaling\.maxReplicas is 4, above the 3 partitions of the tasks and points topics/,
    );
    expect(renderError(['ingest.autoscaling.enabled=false', 'ingest.replicas=5'])).toMatch(/ingest\.replicas is 5, above the 3 partitions/);
    expect(renderError(['ingest.autoscaling.minReplicas=3', 'ingest.autoscaling.maxReplicas=2'])).toMatch(/minReplicas \(3\) is above maxReplicas \(2\)/);
    // Either topic's partitions raise the bound: a pod with points partitions only still projects.
    const { manifests } = render([], ['settings.KAFKA_POINTS_PARTITIONS=8', 'ingest.autoscaling.maxReplicas=8']);
    expect(find(manifests, 'HorizontalPodAutoscaler', 'rel-meridian-ingest')).toMatchObject({ spec: { maxReplicas: 8 } });
    expect(renderError(['settings.KAFKA_POINTS_PARTITIONS=8', 'ingest.autoscaling.maxReplicas=9'])).toMatch(/above the 8 partitions/);
  });

  it("puts every setting api and ingest read in the ConfigMap, except the secrets, and the CLI's own", () => {
    const names = Object.keys(settingDefinitions);
    // A new credential among the settings must be added to the chart's secrets (and to this list).
    expect(names.filter((n) => /PASSWORD|SECRET|_KEY$/.test(n)).sort()).toEqual(SECRET_SETTINGS);
    const expected = names.filter((n) => !SECRET_SETTINGS.includes(n) && !isCliOnly(n)).sort();
    const values = parse(readFileSync(join(chart, 'values.yaml'), 'utf8')) as {
      settings: Record<string, unknown>;
      secrets: { values: Record<string, unknown> };
    };
    expect(Object.keys(values.settings).sort()).toEqual(expected);
    expect(Object.keys(values.secrets.values).sort()).toEqual(SECRET_SETTINGS);
    expect(Object.keys(configMapData(render().manifests)).sort()).toEqual(expected);
  });

  it('keeps every secret out of the ConfigMap and the pod specs: they reach the pods from the Secret only', () => {
    const secretValues = Object.fromEntries(SECRET_SETTINGS.map((n) => [n, `sentinel-${n.toLowerCase()}-0123456789abcdef0123456789`]));
    const { yaml, manifests } = render(
      [],
      Object.entries(secretValues).map(([n, v]) => `secrets.values.${n}=${v}`),
    );
    const secret = find<Manifest & { data: Record<string, string> }>(manifests, 'Secret', 'rel-meridian-secrets');
    expect(Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]))).toEqual(secretValues);
    const data = configMapData(manifests);
    for (const name of SECRET_SETTINGS) expect(data).not.toHaveProperty(name);
    // Not in the clear anywhere (the Secret holds them base64-encoded), nor encoded outside the Secret.
    const outsideSecret = manifests
      .filter((m) => m.kind !== 'Secret')
      .map((m) => JSON.stringify(m))
      .join('\n');
    for (const value of Object.values(secretValues)) {
      expect(yaml).not.toContain(value);
      expect(outsideSecret).not.toContain(Buffer.from(value).toString('base64'));
    }
    for (const d of manifests.filter((m): m is Deployment => m.kind === 'Deployment')) {
      expect(d.spec.template.spec.containers[0]!.envFrom).toEqual([
        { configMapRef: { name: 'rel-meridian-settings' } },
        { secretRef: { name: 'rel-meridian-secrets' } },
      ]);
    }
    // A secret written among the settings would land in the ConfigMap: refused.
    expect(renderError(['settings.S3_SECRET_KEY=oops'])).toMatch(/settings\.S3_SECRET_KEY is a secret/);
    expect(renderError(['secrets.values.MERIDIAN_CURSOR_SECRET=short'])).toMatch(/at least 32 characters/);
  });

  it('uses an existing Secret instead of creating one, and generates a cursor secret when none is given', () => {
    const existing = render([], ['secrets.existingSecret=ops-managed']).manifests;
    expect(existing.filter((m) => m.kind === 'Secret')).toEqual([]);
    for (const d of existing.filter((m): m is Deployment => m.kind === 'Deployment')) {
      expect(d.spec.template.spec.containers[0]!.envFrom).toContainEqual({ secretRef: { name: 'ops-managed' } });
    }
    const generated = find<Manifest & { data: Record<string, string> }>(render().manifests, 'Secret', 'rel-meridian-secrets');
    expect(Object.keys(generated.data)).toEqual(['MERIDIAN_CURSOR_SECRET']);
    expect(Buffer.from(generated.data.MERIDIAN_CURSOR_SECRET!, 'base64').toString().length).toBeGreaterThanOrEqual(32);
  });

  it.each(valueSets)('runs both pods with least privilege (%s)', (_, files) => {
    for (const d of render(files).manifests.filter((m): m is Deployment => m.kind === 'Deployment')) {
      const pod = d.spec.template.spec;
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      expect(pod.automountServiceAccountToken).toBe(false);
      for (const c of pod.containers) {
        expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, privileged: false });
        expect(c.securityContext.capabilities.drop).toEqual(['ALL']);
        expect(c.securityContext.capabilities).not.toHaveProperty('add');
        expect(c).toHaveProperty('resources.requests.cpu');
        expect(c).toHaveProperty('resources.limits.memory');
      }
    }
  });

  it("keeps Kubernetes' service link variables out of the pods: a release named meridian would get MERIDIAN_API_PORT=tcp://…", () => {
    const { manifests } = render();
    for (const d of manifests.filter((m): m is Deployment => m.kind === 'Deployment')) expect(d.spec.template.spec.enableServiceLinks).toBe(false);
    const r = run(helm, ['template', 'meridian', chart, '--kube-version', KUBERNETES_VERSIONS.at(-1)!]);
    expect(
      parseAllDocuments(r.out)
        .map((d) => d.toJS() as Manifest)
        .filter((m) => m.kind === 'Service')
        .map((m) => m.metadata.name),
    ).toEqual(['meridian-api']);
  });

  it('writes large and fractional numbers as the process reads them, whether quoted or not', () => {
    const file = join(work, 'numbers.yaml');
    writeFileSync(file, 'settings:\n  MERIDIAN_MAX_DECOMPRESSED_BYTES: 20000000000\n  MERIDIAN_MAX_EXPANSION_RATIO: 2.5\n  MERIDIAN_API_PORT: 8080\n');
    const { manifests } = render([file]);
    expect(configMapData(manifests)).toMatchObject({
      MERIDIAN_MAX_DECOMPRESSED_BYTES: '20000000000',
      MERIDIAN_MAX_EXPANSION_RATIO: '2.5',
      MERIDIAN_API_PORT: '8080',
    });
    expect(find<Deployment>(manifests, 'Deployment', 'rel-meridian-api').spec.template.spec.containers[0]!.ports).toContainEqual({
      name: 'http',
      containerPort: 8080,
      protocol: 'TCP',
    });
  });
});

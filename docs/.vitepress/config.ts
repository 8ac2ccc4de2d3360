import { defineConfig } from 'vitepress';

// The docs site (`make docs`): Markdown pages under docs/, built into docs/.vitepress/dist
// (git-ignored). A link to a page that does not exist fails the build; the unit test
// test/unit/docs-links.unit.test.ts also checks every #anchor, and README.md's links.
export default defineConfig({
  title: 'Meridian',
  description: 'Metrics and files data service on an event log',
  lang: 'en',
  // Dead links fail the build (VitePress's default, said here so nobody turns it off by accident).
  ignoreDeadLinks: false,
  // The API reference's operations are generated (docs/.vitepress/api-reference.ts) and included,
  // never a page of their own.
  srcExclude: ['**/generated/**'],
  lastUpdated: false,
  themeConfig: {
    search: { provider: 'local' },
    outline: { level: [2, 3] },
    nav: [
      { text: 'Getting started', link: '/getting-started' },
      { text: 'Using it', link: '/using/cli' },
      { text: 'API', link: '/reference/api' },
      { text: 'Operating', link: '/operating/settings' },
      { text: 'Architecture', link: '/architecture/' },
      { text: 'Changelog', link: '/changelog' },
    ],
    sidebar: [
      {
        text: 'Start',
        items: [
          { text: 'Meridian', link: '/' },
          { text: 'Getting started', link: '/getting-started' },
        ],
      },
      {
        text: 'Using it',
        items: [
          { text: 'The meridian CLI', link: '/using/cli' },
          { text: 'The console', link: '/using/console' },
          { text: 'With curl', link: '/using/curl' },
          { text: 'Rollups (1m, 1h)', link: '/using/rollups' },
          { text: 'From Python', link: '/using/python' },
          { text: 'From agents', link: '/using/agents' },
          { text: 'Grafana and PromQL', link: '/using/grafana' },
          { text: 'Deleting points and retention', link: '/using/deleting' },
          { text: 'How it behaves', link: '/using/behaviour' },
        ],
      },
      {
        text: 'Reference',
        items: [
          { text: 'API reference', link: '/reference/api' },
          { text: 'Service contract', link: '/reference/contract' },
        ],
      },
      {
        text: 'Operating',
        items: [
          { text: 'Settings', link: '/operating/settings' },
          { text: 'Limits', link: '/operating/limits' },
          { text: 'Using existing services', link: '/operating/existing-services' },
          { text: 'Kafka topics', link: '/operating/kafka-topics' },
          { text: 'Kubernetes', link: '/operating/kubernetes' },
          { text: 'Running on a cluster', link: '/operating/cluster' },
          { text: 'ClickHouse versions', link: '/operating/clickhouse-versions' },
          { text: 'Replay', link: '/operating/replay' },
          { text: 'Where state lives', link: '/operating/state' },
        ],
      },
      {
        text: 'Inside',
        items: [
          { text: 'Architecture', link: '/architecture/' },
          { text: 'Decisions', link: '/architecture/decisions' },
          { text: 'Benchmarks', link: '/benchmarks' },
        ],
      },
      {
        text: 'Project',
        items: [
          { text: 'Contributing', link: '/contributing' },
          { text: 'Changelog', link: '/changelog' },
        ],
      },
    ],
  },
});

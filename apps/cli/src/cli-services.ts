import type { AdapterOptions } from '@meridian/config';
import { topicsFor } from '@meridian/kafka';
import type { Logger } from '@meridian/observability';
import { foldContext, type Adapters, type FoldContext, type Platform, type UntilDoneOptions } from '@meridian/platform';
import type { ReplayDeps } from '@meridian/replay';

/** What the admin commands run on: replay's dependencies and the accounts fold's. */
export type CliServices = ReplayDeps & { readonly folds: FoldContext };

/** The CLI's services over the process's adapters (main.ts; tests run commands the same way). */
export function composeCli(logger: Logger, adapters: Adapters, options: AdapterOptions, platform: Platform, startRetry: UntilDoneOptions): CliServices {
  return {
    log: adapters.log,
    topics: topicsFor(options.topicPrefix),
    topicPrefix: options.topicPrefix,
    clickhouse: adapters.clickhouse,
    clickhouseOptions: { ...options.clickhouse, logger },
    projectorBatchRows: options.projectorBatchRows,
    logger,
    prepareTopics: () => platform.prepareTopics(),
    folds: foldContext(adapters, options, logger, startRetry),
  };
}

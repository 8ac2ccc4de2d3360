import type { AdapterOptions } from '@meridian/config';
import { topicsFor } from '@meridian/kafka';
import type { Logger } from '@meridian/observability';
import type { FoldContext } from '@meridian/folds';
import { archivedLog, foldContext, type Adapters, type Platform } from '@meridian/platform';
import type { UntilDoneOptions } from '@meridian/runtime';
import type { ReplayDeps } from '@meridian/replay';

/** What the admin commands run on: replay's dependencies and the accounts fold's. */
export type CliServices = ReplayDeps & { readonly folds: FoldContext };

/** The CLI's services over the process's adapters (main.ts; tests run commands the same way). */
export function composeCli(logger: Logger, adapters: Adapters, options: AdapterOptions, platform: Platform, startRetry: UntilDoneOptions): CliServices {
  const topics = topicsFor(options.topicPrefix);
  // Replay reads history as the archive plus the brokers; appends go to the brokers.
  const history = archivedLog(adapters, topics);
  return {
    log: Object.assign(history, { writer: () => adapters.log.writer() }),
    topics,
    topicPrefix: options.topicPrefix,
    clickhouse: adapters.clickhouse,
    clickhouseOptions: { ...options.clickhouse, logger },
    projectorBatchRows: options.projectorBatchRows,
    logger,
    prepareTopics: () => platform.prepareTopics(),
    folds: foldContext(adapters, options, logger, startRetry),
  };
}

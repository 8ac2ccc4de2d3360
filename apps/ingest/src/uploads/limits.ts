import type { Settings } from '@meridian/config';

/** What one upload may make the worker decompress, hold and spend in time. */
export type UploadLimits = {
  readonly maxDecompressedBytes: number;
  readonly maxExpansionRatio: number;
  readonly maxLineLength: number;
  readonly maxColumns: number;
  readonly maxJsonDocumentLength: number;
  readonly timeBudgetMs: number;
};

export function uploadLimitsFrom(settings: Settings): UploadLimits {
  return {
    maxDecompressedBytes: settings.MERIDIAN_MAX_DECOMPRESSED_BYTES,
    maxExpansionRatio: settings.MERIDIAN_MAX_EXPANSION_RATIO,
    maxLineLength: settings.MERIDIAN_MAX_LINE_BYTES,
    maxColumns: settings.MERIDIAN_MAX_COLUMNS,
    maxJsonDocumentLength: settings.MERIDIAN_MAX_JSON_DOCUMENT_BYTES,
    timeBudgetMs: settings.MERIDIAN_UPLOAD_TIME_BUDGET_MS,
  };
}

/**
 * An upload went past one of its limits. Final: running it again would only do the same
 * work again, so its task fails at once with this message as the reason (no retry).
 */
export class UploadLimitExceeded extends Error {
  override readonly name = 'UploadLimitExceeded';
}

/** What one upload may make the worker decompress, hold and spend in time (compiled from the settings in options.ts). */
export type UploadLimits = {
  readonly maxDecompressedBytes: number;
  readonly maxExpansionRatio: number;
  readonly maxLineLength: number;
  readonly maxColumns: number;
  readonly maxJsonDocumentLength: number;
  readonly timeBudgetMs: number;
};

/**
 * An upload went past one of its limits. Final: running it again would only do the same
 * work again, so its task fails at once with this message as the reason (no retry).
 */
export class UploadLimitExceeded extends Error {
  override readonly name = 'UploadLimitExceeded';
}

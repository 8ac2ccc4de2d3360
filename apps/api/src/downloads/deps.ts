import type { ApiParts } from '../api-parts.ts';
import type { DownloadDeps } from './routes.ts';
import type { SeriesDeps } from './series-route.ts';

export function downloadDeps({ services, settings, cursors, slots }: ApiParts): DownloadDeps {
  return {
    conn: services.clickhouseOptions,
    catalog: services.catalog,
    limits: {
      maxRowsCeiling: settings.MERIDIAN_MAX_ROWS_CEILING,
      maxListNames: settings.MERIDIAN_MAX_DOWNLOAD_NAMES,
      maxRollupRows: settings.MERIDIAN_MAX_ROLLUP_ROWS,
    },
    batchRows: settings.MERIDIAN_DOWNLOAD_BATCH_ROWS,
    partRows: settings.MERIDIAN_DOWNLOAD_PART_ROWS,
    maxBodyBytes: settings.MERIDIAN_MAX_DOWNLOAD_BODY_BYTES,
    cursors,
    streams: slots.downloads,
  };
}

export function seriesDeps({ services, settings }: ApiParts): SeriesDeps {
  return {
    conn: services.clickhouseOptions,
    catalog: services.catalog,
    limits: { maxPoints: settings.MERIDIAN_MAX_SERIES_POINTS, maxSeries: settings.MERIDIAN_MAX_SERIES_PER_REQUEST },
  };
}

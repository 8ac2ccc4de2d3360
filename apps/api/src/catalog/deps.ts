import type { ApiParts } from '../api-parts.ts';
import type { CatalogDeps } from './routes.ts';

export function catalogDeps({ services, settings }: ApiParts): CatalogDeps {
  return { catalog: services.catalog, maxListNames: settings.MERIDIAN_MAX_DOWNLOAD_NAMES, pageCeiling: settings.MERIDIAN_MAX_CATALOG_PAGE };
}

import type { RouteDef } from '../http/route.ts';
import type { FileDeps } from './deps.ts';
import { defineFileRoutes } from './define-routes.ts';
import { downloadFileRoute } from './download-route.ts';
import { deleteFileRoute, describeFileRoute, getFileRoute } from './entry-routes.ts';
import { shareFileRoute, unshareFileRoute } from './grant-routes.ts';
import { listFilesRoute } from './list-route.ts';

/** Every file route, in the order the OpenAPI document lists them. */
export function fileRoutes(deps: FileDeps): RouteDef[] {
  return [
    ...defineFileRoutes(deps),
    listFilesRoute(deps),
    downloadFileRoute(deps),
    getFileRoute(deps.files),
    describeFileRoute(deps.files),
    deleteFileRoute(deps.files),
    shareFileRoute(deps.files, deps.limits.grantsPerFile),
    unshareFileRoute(deps.files),
  ];
}

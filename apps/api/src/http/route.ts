import type { Context } from 'koa';
import type Router from '@koa/router';
import type { RouterMiddleware } from '@koa/router';
import { type z } from 'zod';
import { DomainError, type FieldError, type UserRecord } from '@meridian/domain';
import type { ProblemType } from './problem.ts';

/** Who may call a route: anyone, any authenticated user, or admins only. */
export type Auth = 'public' | 'user' | 'admin';

export type ResponseDoc = {
  readonly description: string;
  readonly schema?: z.ZodType;
  /** Defaults to application/json. */
  readonly contentType?: string;
  readonly example?: unknown;
  readonly headers?: Record<string, { description: string; schema: z.ZodType }>;
  /** The same response in other content types the route can answer with (a download as JSON). */
  readonly alsoAs?: Record<string, { schema: z.ZodType; example?: unknown }>;
};

export type RouteInput<Q, P, B, H = unknown> = { query: Q; params: P; body: B; headers: H; user: UserRecord };

/**
 * One route, described once: the schemas here validate every request and generate the
 * OpenAPI document, so the documentation cannot drift from the behaviour.
 */
export type RouteDef<Q = unknown, P = unknown, B = unknown, H = unknown> = {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** OpenAPI form: /api/v1/api_keys/{key_id} */
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly tags: readonly string[];
  readonly auth: Auth;
  readonly query?: z.ZodType<Q>;
  readonly params?: z.ZodType<P>;
  /** Request headers the route reads, keyed by their lower-case names (as Node gives them). */
  readonly headers?: z.ZodType<H>;
  /** JSON body schema; routes that read their body themselves (uploads) leave it out. */
  readonly body?: z.ZodType<B>;
  readonly requestBodyDoc?: { readonly contentTypes: Record<string, z.ZodType>; readonly description?: string };
  readonly responses: Readonly<Record<number, ResponseDoc>>;
  /** The error types this route can answer with, beyond the ones every route has. */
  readonly problems?: readonly ProblemType[];
  /**
   * A streaming route (uploads, downloads) may legitimately run long: it is exempt from the
   * request timeout (MERIDIAN_REQUEST_TIMEOUT_MS), never from the rate limit.
   */
  readonly streaming?: boolean;
  readonly handler: (ctx: Context, input: RouteInput<Q, P, B, H>) => Promise<void> | void;
};

export function defineRoute<Q = undefined, P = undefined, B = undefined, H = undefined>(def: RouteDef<Q, P, B, H>): RouteDef {
  return def as unknown as RouteDef;
}

export function koaPath(openApiPath: string): string {
  return openApiPath.replace(/\{(\w+)\}/g, ':$1');
}

function issuesToErrors(where: string, error: z.ZodError): FieldError[] {
  return error.issues.map((i) => ({ field: [where, ...i.path.map(String)].filter(Boolean).join('.'), reason: i.message }));
}

/** Validates one part of the request; collects its field errors instead of throwing. */
function parsePart<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string, errors: FieldError[]): T {
  if (!schema) return undefined as T;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  errors.push(...issuesToErrors(where, result.error));
  return undefined as T;
}

export type Authenticator = (ctx: Context) => UserRecord;

/** Limits applied around every route: a timeout for non-streaming ones, a per-user rate limit after authentication. */
export type MountOptions = {
  readonly timeout?: RouterMiddleware;
  readonly rateLimit?: (ctx: Context, userName: string) => void;
};

/** Registers routes on a router: timeout, authentication, rate limit, then validation of query, path, headers and body, then the handler. */
export function mountRoutes(
  router: Router,
  defs: readonly RouteDef[],
  authenticate: Authenticator,
  jsonBody: RouterMiddleware,
  options: MountOptions = {},
): void {
  for (const def of defs) {
    const limits: RouterMiddleware[] = options.timeout && !def.streaming ? [options.timeout] : [];
    const parse: RouterMiddleware[] = def.body ? [jsonBody] : [];
    // Authentication and the rate limit come before the body is read: a refused caller costs no parsing.
    const guard: RouterMiddleware = async (ctx, next) => {
      if (def.auth !== 'public') {
        const user = authenticate(ctx);
        options.rateLimit?.(ctx, user.user_name);
        if (def.auth === 'admin' && !user.is_admin) throw new DomainError('forbidden', 'this operation needs an admin');
        ctx.state.userRecord = user;
      }
      await next();
    };
    router.register(
      koaPath(def.path),
      [def.method],
      [
        ...limits,
        guard,
        ...parse,
        async (ctx: Context) => {
          const user = (def.auth === 'public' ? undefined : ctx.state.userRecord) as UserRecord;
          const errors: FieldError[] = [];
          const query = parsePart(def.query, ctx.query, 'query', errors);
          const params = parsePart(def.params, ctx.params, 'path', errors);
          const headers = parsePart(def.headers, ctx.headers, 'header', errors);
          const body = parsePart(def.body, (ctx.request as { body?: unknown }).body, 'body', errors);
          if (errors.length > 0) throw new DomainError('validation', `invalid request: ${errors.map((e) => `${e.field} ${e.reason}`).join('; ')}`, errors);
          await def.handler(ctx, { query, params, body, headers, user });
        },
      ],
      { name: def.operationId },
    );
  }
}
